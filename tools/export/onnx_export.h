// ONNX export (`crema export`, crema.export_onnx): a deploy net with its trained weights as an
// ONNX model of opset 17, written through Debian's onnx library (libonnx-dev), whose checker and
// shape inference run on the model before it is written.
//
// The graph's inputs are the tops of the Input layers (a net's legacy input fields become Input
// layers on loading), with their shapes; its outputs are the tops no layer consumes. Caffe's
// semantics are kept exactly: pooling's CEIL rounding becomes extra pads at the end, average
// pooling divides by the window clipped to the padded input as Caffe does, BatchNorm divides its
// stored statistics by their weight and takes the in-place Scale after it into one
// BatchNormalization node, Dropout and Split disappear. A layer type without a conversion is one
// error naming the layer and its type.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "core/net.h"

namespace crema {

struct OnnxExportOptions {
  // Axis 0 of every input and output is the symbolic dimension "N": the model runs at any batch
  // size. Otherwise the net's batch size is fixed in the model.
  bool dynamic_batch = false;
  // When positive, the batch size (axis 0) of every Input layer, replacing the prototxt's.
  int batch = 0;
};

// The model of `net` (built in the TEST phase, weights loaded) as ONNX. The model has passed
// onnx's checker, and the shapes its shape inference gives every value equal the Net's. Throws
// crema::Error naming the layer for a layer it cannot convert.
onnx::ModelProto net_to_onnx(Net<float>& net, const OnnxExportOptions& options);

// Sets axis 0 (the batch) of every Input layer's shapes to `batch`.
void set_input_batch(NetParameter* param, int batch);

struct OnnxExportRequest {
  std::string model;    // a deploy prototxt
  std::string weights;  // its .caffemodel
  std::string onnx;     // the file to write
  OnnxExportOptions options;
};

// Loads the net on the CPU in the TEST phase with its weights (every layer with parameters must
// find its own in the weights: none may keep random initial values), converts it and writes the
// model to request.onnx atomically: the file appears whole or not at all. Throws crema::Error
// with one line naming the file or the layer on any failure. Returns the number of nodes.
int export_onnx(const OnnxExportRequest& request);

}  // namespace crema
