// The layer registry: the explicit table from Caffe's type names to constructors. Adding a layer
// type means adding one row here.
#include "core/layer_registry.h"

#include <algorithm>
#include <sstream>
#include <utility>

#include "layers/accuracy_layer.h"
#include "layers/convolution_layer.h"
#include "layers/data_layer.h"
#include "layers/dropout_layer.h"
#include "layers/dummy_data_layer.h"
#include "layers/flatten_layer.h"
#include "layers/inner_product_layer.h"
#include "layers/input_layer.h"
#include "layers/lrn_layer.h"
#include "layers/pooling_layer.h"
#include "layers/relu_layer.h"
#include "layers/sigmoid_layer.h"
#include "layers/silence_layer.h"
#include "layers/softmax_layer.h"
#include "layers/softmax_with_loss_layer.h"
#include "layers/split_layer.h"
#include "layers/tanh_layer.h"

namespace crema {
namespace {

template <typename Dtype>
using Factory = std::unique_ptr<Layer<Dtype>> (*)(const LayerParameter&, Device);

template <template <typename> class L, typename Dtype>
std::unique_ptr<Layer<Dtype>> make(const LayerParameter& param, Device device) {
  return std::make_unique<L<Dtype>>(param, device);
}

template <typename Dtype>
struct Entry {
  const char* type;
  Factory<Dtype> factory;
};

// Sorted by type name, so layer_types() and error messages list them in order.
template <typename Dtype>
constexpr Entry<Dtype> kTable[] = {
    {"Accuracy", &make<AccuracyLayer, Dtype>},
    {"Convolution", &make<ConvolutionLayer, Dtype>},
    {"Data", &make<DataLayer, Dtype>},
    {"Dropout", &make<DropoutLayer, Dtype>},
    {"DummyData", &make<DummyDataLayer, Dtype>},
    {"Flatten", &make<FlattenLayer, Dtype>},
    {"InnerProduct", &make<InnerProductLayer, Dtype>},
    {"Input", &make<InputLayer, Dtype>},
    {"LRN", &make<LrnLayer, Dtype>},
    {"Pooling", &make<PoolingLayer, Dtype>},
    {"ReLU", &make<ReluLayer, Dtype>},
    {"Sigmoid", &make<SigmoidLayer, Dtype>},
    {"Silence", &make<SilenceLayer, Dtype>},
    {"Softmax", &make<SoftmaxLayer, Dtype>},
    {"SoftmaxWithLoss", &make<SoftmaxWithLossLayer, Dtype>},
    {"Split", &make<SplitLayer, Dtype>},
    {"TanH", &make<TanhLayer, Dtype>},
};

}  // namespace

template <typename Dtype>
std::unique_ptr<Layer<Dtype>> create_layer(const LayerParameter& param, Device device) {
  for (const Entry<Dtype>& e : kTable<Dtype>)
    if (param.type() == e.type) return e.factory(param, device);
  std::ostringstream known;
  const std::vector<std::string> types = layer_types();
  for (size_t i = 0; i < types.size(); ++i) known << (i ? ", " : "") << types[i];
  const std::string where = param.name().empty() ? "" : "layer " + param.name() + ": ";
  fail(where, "unknown layer type \"", param.type(), "\" (known: ", known.str(), ")");
}

std::vector<std::string> layer_types() {
  std::vector<std::string> types;
  for (const Entry<float>& e : kTable<float>) types.emplace_back(e.type);
  std::sort(types.begin(), types.end());
  return types;
}

template std::unique_ptr<Layer<float>> create_layer<float>(const LayerParameter&, Device);
template std::unique_ptr<Layer<double>> create_layer<double>(const LayerParameter&, Device);

}  // namespace crema
