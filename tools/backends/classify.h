// `crema classify`: a trained net's top classes for image files, as Caffe's cpp_classification:
// each image is read (OpenCV), resized to the net's input, transformed as at training time
// (mean file or values, scale: transform_param's fields) and forwarded in the TEST phase; the
// net's last output holds a score per class.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "crema.pb.h"
#include "primitives/types.h"

namespace crema {

struct ClassifyRequest {
  std::string model;                  // a deploy prototxt fed by an Input layer
  std::string weights;                // its .caffemodel
  std::string labels;                 // one class name per line; empty: the class numbers
  TransformationParameter transform;  // mean_file / mean_value, scale (no crop, no mirror)
  int top = 5;
  std::vector<std::string> images;
  prim::Device device = prim::Device::kCPU;
  int device_id = 0;
};

// Per image, in order: the top scores with their class names, best first. Throws crema::Error
// naming the file for an unreadable image, a net without an Input layer of 1 or 3 channels,
// weights that fit no layer, or a labels file whose line count differs from the classes.
std::vector<std::vector<std::pair<float, std::string>>> classify(const ClassifyRequest& request);

}  // namespace crema
