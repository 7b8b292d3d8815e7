// WindowData layer (Caffe's "WindowData", R-CNN fine-tuning): batches of windows cut out of
// images that a window file lists (data/window_file.h: images, and per image the windows with
// class and overlap), warped to crop_size x crop_size (data/window_crop.h: crop_mode "warp" or
// "square", context_pad), mirrored at random, minus the mean (transform_param mean_file or
// mean_value), times scale.
//
// Sampling, as Caffe: each batch holds batch_size - floor(batch_size * fg_fraction) background
// windows (overlap < bg_threshold, label 0) first, then the foreground ones (overlap >=
// fg_threshold, their class), each window drawn uniformly at random with replacement from its
// set. The draws of each example come from a generator seeded with the layer's seed and the
// example's number, so seeded runs repeat and a resumed run continues them.
//
// Images are decoded with OpenCV as 3-channel colour (a build without OpenCV fails at setup);
// with cache_images the files' bytes are read once at setup and decoded at each use. Paths are
// root_folder + the window file's path. Parameters may also sit in window_data_param (scale,
// mean_file, crop_size, mirror: Caffe's older place), where transform_param leaves them unset.
//
// Tops: top[0] batch_size x 3 x crop_size x crop_size; top[1] labels, batch_size.
#pragma once

#include <string>
#include <vector>

#include "data/window_crop.h"
#include "data/window_file.h"
#include "layers/base_data_layer.h"

namespace crema {

template <typename Dtype>
class WindowDataLayer : public BasePrefetchingDataLayer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;

  WindowDataLayer(const LayerParameter& param, Device device);
  // Stops and joins the engine's threads.
  ~WindowDataLayer() override;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;

  LayerSignature signature() const override { return this->signature_of("WindowData"); }

  const WindowFile& windows() const { return windows_; }

 protected:
  void read_record(SourceRecord* record) override;
  float decode_record(const SourceRecord& record, ChwImage* image,
                      std::string* where) const override;
  void skip_example() override { ++next_example_; }
  void seek_source(uint64_t records) override { next_example_ = records; }

 private:
  void load_mean(const TransformationParameter& t);

  WindowFile windows_;
  std::vector<std::string> cache_;  // the images' bytes, with cache_images
  WindowMean mean_;
  int batch_size_ = 0, foreground_per_batch_ = 0;
  int crop_size_ = 0, context_pad_ = 0;
  bool square_ = false, mirror_ = false;
  float scale_ = 1;
  uint64_t seed_ = 0;
  uint64_t next_example_ = 0;
};

}  // namespace crema
