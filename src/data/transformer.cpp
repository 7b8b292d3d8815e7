// DataTransformer: crop, mirror, mean subtraction and scaling of one example.
#include "data/transformer.h"

#include "core/errors.h"
#include "core/proto_io.h"
#include "core/tensor.h"

namespace crema {

namespace {

std::string shape_str(int c, int h, int w) { return detail::make_message(c, "x", h, "x", w); }

// The random stream of one example: SplitMix64 (Steele, Lea, Flood 2014) started from the layer's
// key and the example's number. Cheap to start, so every example gets its own.
class ExampleRandom {
 public:
  ExampleRandom(uint64_t key, uint64_t record)
      : state_(key ^ mix(record + 0x632BE59BD9B4E019ull)) {}
  // Uniform integer in [0, n), n > 0 (the high bits of a 64x64 product: no modulo bias worth
  // the name at image sizes).
  int uniform(int n) { return int((unsigned __int128)next() * uint64_t(n) >> 64); }

 private:
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t next() { return mix(state_ += 0x9E3779B97F4A7C15ull); }
  uint64_t state_;
};

// One image on the calling decode worker: a CPU handle of one thread, one per thread.
prim::Handle& worker_handle() {
  thread_local prim::Handle h(prim::Device::kCPU);
  thread_local const bool one_thread = (h.set_cpu_threads(1), true);
  (void)one_thread;
  return h;
}

}  // namespace

DataTransformer::DataTransformer(const TransformationParameter& param, Phase phase, uint64_t seed)
    : param_(param), phase_(phase), rng_(seed) {
  set_random(rng_);
  if (param_.has_mean_file() && param_.mean_value_size() > 0)
    fail("transform_param: give either mean_file or mean_value, not both");
  if (!param_.has_mean_file()) return;

  const std::string& path = param_.mean_file();
  BlobProto blob;
  read_binary_proto(path, &blob);
  std::vector<int64_t> dims;
  if (blob.has_shape()) {
    dims.assign(blob.shape().dim().begin(), blob.shape().dim().end());
  } else {
    dims = {blob.num(), blob.channels(), blob.height(), blob.width()};
  }
  // A mean image is 1 x C x H x W (Caffe's compute_image_mean) or C x H x W.
  if (dims.size() == 4 && dims[0] == 1) dims.erase(dims.begin());
  if (dims.size() != 3 || dims[0] <= 0 || dims[1] <= 0 || dims[2] <= 0 ||
      checked_count({dims[0], dims[1], dims[2]}) < 0)
    fail(path, ": a mean file must hold one 1 x C x H x W image");
  const int64_t count = dims[0] * dims[1] * dims[2];
  if (blob.data_size() == count) {
    mean_.assign(blob.data().begin(), blob.data().end());
  } else if (blob.double_data_size() == count) {
    mean_.assign(blob.double_data().begin(), blob.double_data().end());
  } else {
    fail(path, ": mean image of shape ", shape_str(int(dims[0]), int(dims[1]), int(dims[2])),
         " needs ", count, " values, has ", std::max(blob.data_size(), blob.double_data_size()));
  }
  mean_c_ = int(dims[0]);
  mean_h_ = int(dims[1]);
  mean_w_ = int(dims[2]);
}

std::vector<int> DataTransformer::output_shape(int channels, int height, int width) const {
  const int crop = int(param_.crop_size());
  if (param_.crop_size() > 0 &&
      (param_.crop_size() > uint32_t(height) || param_.crop_size() > uint32_t(width)))
    fail("transform_param.crop_size ", param_.crop_size(), " is larger than the input ",
         shape_str(channels, height, width));
  const int n = param_.mean_value_size();
  if (n > 1 && n != channels)
    fail("transform_param.mean_value is given ", n, " times but the input has ", channels,
         " channels: give one value or one per channel");
  if (!mean_.empty()) {
    const bool same = mean_h_ == height && mean_w_ == width;
    const bool covers_crop = crop > 0 && mean_h_ >= crop && mean_w_ >= crop;
    if (mean_c_ != channels || !(same || covers_crop))
      fail(param_.mean_file(), ": mean image has shape ", shape_str(mean_c_, mean_h_, mean_w_),
           " but the data has shape ", shape_str(channels, height, width),
           crop > 0 ? detail::make_message(" with crop_size ", crop) : std::string(),
           "; the channels must match and the size must equal the data's",
           crop > 0 ? " or be at least the crop" : "");
  }
  if (crop > 0) return {channels, crop, crop};
  return {channels, height, width};
}

void DataTransformer::set_random(const std::mt19937_64& rng) {
  rng_ = rng;
  std::mt19937_64 first = rng;
  stream_key_ = first();
}

prim::ImageCrop DataTransformer::crop(int height, int width, uint64_t record) const {
  ExampleRandom random(stream_key_, record);
  const int crop = int(param_.crop_size());
  const bool train = phase_ == TRAIN;
  prim::ImageCrop k;
  k.height = height;
  k.width = width;
  k.pitch = width;
  if (crop > 0) {
    k.y0 = train ? random.uniform(height - crop + 1) : (height - crop) / 2;
    k.x0 = train ? random.uniform(width - crop + 1) : (width - crop) / 2;
  }
  // Caffe flips in both phases when mirror is set; only the crop offset depends on the phase.
  k.mirror = param_.mirror() && random.uniform(2) == 1;
  // The mean image's window starts at the data's own pixel when it has the data's size, else at
  // its centered crop.
  const bool mean_same = mean_h_ == height && mean_w_ == width;
  k.mean_y0 = mean_same ? k.y0 : (mean_h_ - (crop > 0 ? crop : height)) / 2;
  k.mean_x0 = mean_same ? k.x0 : (mean_w_ - (crop > 0 ? crop : width)) / 2;
  return k;
}

prim::CropImagesDesc DataTransformer::crop_desc(int channels, int height, int width) const {
  const int crop = int(param_.crop_size());
  prim::CropImagesDesc d;
  d.channels = channels;
  d.out_h = crop > 0 ? crop : height;
  d.out_w = crop > 0 ? crop : width;
  d.mean_image = mean_.empty() ? nullptr : mean_.data();
  d.mean_h = mean_h_;
  d.mean_w = mean_w_;
  d.scale = param_.scale();
  return d;
}

std::vector<float> DataTransformer::mean_values(int channels) const {
  const int n = param_.mean_value_size();
  std::vector<float> v;
  if (n > 0)
    for (int c = 0; c < channels; ++c) v.push_back(param_.mean_value(n == 1 ? 0 : c));
  return v;
}

void DataTransformer::transform(const float* in, int channels, int height, int width, float* out,
                                uint64_t record) const {
  transform(in, prim::PixelType::kFloat32, channels, height, width, out, record);
}

void DataTransformer::transform(const uint8_t* in, int channels, int height, int width, float* out,
                                uint64_t record) const {
  transform(in, prim::PixelType::kUInt8, channels, height, width, out, record);
}

void DataTransformer::transform(const void* in, prim::PixelType type, int channels, int height,
                                int width, float* out, uint64_t record) const {
  prim::ImageCrop k = crop(height, width, record);
  k.pixels = in;
  prim::CropImagesDesc d = crop_desc(channels, height, width);
  d.pixels = type;
  const std::vector<float> values = mean_values(channels);
  if (!values.empty()) d.mean_values = values.data();
  prim::crop_images(worker_handle(), d, 1, &k, out);
}

}  // namespace crema
