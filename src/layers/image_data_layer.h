// ImageData layer (Caffe's "ImageData"): examples read from image files that a list file names,
// one "<path> <label>" per line (data/image_list.h), each path prefixed with root_folder as
// written (Caffe joins them without adding a '/'). Images are decoded (data/image_io.h) as color (3
// channels, BGR) or, with is_color: false, gray, and resized to new_height x new_width when both
// are set; they then go through the same transform and prefetch path as the Data layer
// (BasePrefetchingDataLayer), so ImageData on a list and Data on the LMDB that convert_imageset
// makes of it give the same batches. The engine's reader walks the list; its workers
// (image_data_param.threads of them) read and decode the files.
//
// Order: the list's order, wrapping around after the last entry; with shuffle, each pass over
// the list (epoch e) takes it in the order of a shuffle drawn from a generator seeded with the
// layer's seed and e, so that any point of a run can be returned to directly (resume). rand_skip
// skips a random number of entries in [0, rand_skip) at setup. The seed and the skip draw from
// the calling thread's generator (crema::thread_rng, seeded with random_seed), so seeded runs
// see the same order.
//
// Errors name the list file and line and the image path: a missing or undecodable image is thrown
// by setup (the first image) or by the forward() that would have used it. Without every image
// of the same size, set new_height and new_width. Builds without OpenCV read JPEG files only, and
// do not resize (data/image_io.h).
#pragma once

#include <string>
#include <vector>

#include "core/rng.h"
#include "data/image_io.h"
#include "data/image_list.h"
#include "layers/base_data_layer.h"

namespace crema {

template <typename Dtype>
class ImageDataLayer : public BasePrefetchingDataLayer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;

  ImageDataLayer(const LayerParameter& param, Device device);
  // Stops and joins the prefetch thread.
  ~ImageDataLayer() override;

  // Reads the list, shuffles/skips, shapes the tops from the first image, starts the thread.
  void layer_setup(const Tensors& bottom, const Tensors& top) override;

  LayerSignature signature() const override { return this->signature_of("ImageData"); }

 protected:
  void read_record(SourceRecord* record) override;
  float decode_record(const SourceRecord& record, ChwImage* image,
                      std::string* where) const override;
  void skip_example() override;
  void seek_source(uint64_t records) override;
  const char* shape_mismatch_hint() const override {
    return "images of different sizes need image_data_param new_height and new_width";
  }

 private:
  // Reads entry i of the list into *image; *where names it. Safe on several threads at once.
  void read_entry(size_t i, ChwImage* image, std::string* where) const;
  // Moves to place `position` of epoch `epoch`, drawing that epoch's order when shuffling.
  void go_to(uint64_t epoch, size_t position);

  std::vector<ImageListEntry> entries_;
  std::vector<size_t> order_;  // the current epoch's order of entries_ (with shuffle)
  uint64_t epoch_ = 0;
  size_t position_ = 0;        // in the current epoch
  size_t start_position_ = 0;  // rand_skip's draw
  uint64_t shuffle_seed_ = 0;
  ImageReadOptions options_;
};

}  // namespace crema
