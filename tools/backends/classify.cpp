// `crema classify`: images -> the net's input -> top classes.
#include "backends/classify.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <numeric>

#include "core/errors.h"
#include "core/net.h"
#include "core/upgrade_proto.h"
#include "data/datum.h"
#include "data/image_io.h"
#include "data/transformer.h"

namespace crema {
namespace {

std::vector<std::string> read_labels(const std::string& path, int64_t classes) {
  std::vector<std::string> labels;
  if (path.empty()) {
    for (int64_t c = 0; c < classes; ++c) labels.push_back(std::to_string(c));
    return labels;
  }
  std::ifstream in(path);
  CREMA_REQUIRE(in, path, ": cannot open the labels file");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(line);
  }
  CREMA_REQUIRE(int64_t(labels.size()) == classes, path, ": ", labels.size(),
                " labels for a net of ", classes, " classes");
  return labels;
}

}  // namespace

std::vector<std::vector<std::pair<float, std::string>>> classify(const ClassifyRequest& r) {
  CREMA_REQUIRE(!r.images.empty(), "classify needs image files");
  CREMA_REQUIRE(r.top > 0, "top must be positive, got ", r.top);
  CREMA_REQUIRE(image_io_available(), "classify reads images: crema was built without OpenCV");
  Handle h(r.device, r.device_id);  // first: it makes its GPU the one the net allocates on
  Net<float> net(load_net_param_text(r.model), TEST, r.device);
  require_weights_copied(net.copy_trained_layers_from(load_net_param_binary(r.weights)), r.weights);
  Tensor<float>* input = nullptr;
  for (int i = 0; i < net.num_layers() && !input; ++i)
    if (std::string(net.layers()[size_t(i)]->type()) == "Input")
      input = net.top_vecs()[size_t(i)][0];
  CREMA_REQUIRE(
      input && input->num_axes() == 4 && (input->channels() == 1 || input->channels() == 3),
      r.model, ": classify needs an Input layer of N x 1 or N x 3 x H x W images");
  const int channels = int(input->channels()), height = int(input->height()),
            width = int(input->width());
  const int64_t batch = std::max<int64_t>(1, input->num());
  TransformationParameter tp = r.transform;
  tp.clear_crop_size();
  tp.clear_mirror();
  DataTransformer transformer(tp, TEST, 0);
  CREMA_REQUIRE(transformer.output_shape(channels, height, width) ==
                    std::vector<int>({channels, height, width}),
                r.model, ": the transform changes the input's shape");
  ImageReadOptions options;
  options.color = channels == 3 ? ColorMode::kColor : ColorMode::kGray;
  options.new_height = height;
  options.new_width = width;

  std::vector<std::vector<std::pair<float, std::string>>> results;
  std::vector<std::string> labels;
  const size_t example = size_t(channels) * height * width;
  for (size_t first = 0; first < r.images.size(); first += size_t(batch)) {
    const size_t n = std::min(r.images.size() - first, size_t(batch));
    std::vector<float> pixels(n * example);
    Datum datum;
    ChwImage image;
    for (size_t i = 0; i < n; ++i) {
      const std::string& path = r.images[first + i];
      read_image_to_datum(path, 0, options, &datum);
      datum_to_chw(datum, path, ColorMode::kNative, &image);
      transformer.transform(image.data.data(), image.channels, image.height, image.width,
                            pixels.data() + i * example, first + i);
    }
    input->reshape({int64_t(n), channels, height, width});
    net.reshape();
    input->set_data(pixels);
    net.forward(h);
    const Tensor<float>& out = *net.output_blobs().back();
    const int64_t classes = out.count() / int64_t(n);
    if (labels.empty()) labels = read_labels(r.labels, classes);
    const std::vector<float> scores = out.data_vector();
    for (size_t i = 0; i < n; ++i) {
      std::vector<int64_t> order{};
      order.resize(size_t(classes));
      std::iota(order.begin(), order.end(), int64_t(0));
      const float* s = scores.data() + i * size_t(classes);
      const size_t k = std::min(size_t(r.top), order.size());
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [s](int64_t a, int64_t b) {
        return s[a] > s[b] || (s[a] == s[b] && a < b);
      });
      std::vector<std::pair<float, std::string>> top;
      for (size_t j = 0; j < k; ++j) top.emplace_back(s[order[j]], labels[size_t(order[j])]);
      results.push_back(std::move(top));
    }
  }
  return results;
}

}  // namespace crema
