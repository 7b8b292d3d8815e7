// The layer registry: the explicit table from Caffe's type names to constructors. Adding a layer
// type means adding one row here.
#include "layers/layer_registry.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>
#include <type_traits>
#include <utility>

#include "core/layer_place.h"
#include "core/net.h"
#include "layers/accuracy_layer.h"
#include "layers/activation_layer.h"
#include "layers/argmax_layer.h"
#include "layers/batch_norm_layer.h"
#include "layers/batch_reindex_layer.h"
#include "layers/bias_layer.h"
#include "layers/concat_layer.h"
#include "layers/contrastive_loss_layer.h"
#include "layers/convolution_layer.h"
#include "layers/crop_layer.h"
#include "layers/data_layer.h"
#include "layers/deconvolution_layer.h"
#include "layers/dropout_layer.h"
#include "layers/dummy_data_layer.h"
#include "layers/eltwise_layer.h"
#include "layers/embed_layer.h"
#include "layers/euclidean_loss_layer.h"
#include "layers/filter_layer.h"
#include "layers/flatten_layer.h"
#include "layers/hdf5_data_layer.h"
#include "layers/hdf5_output_layer.h"
#include "layers/hinge_loss_layer.h"
#include "layers/im2col_layer.h"
#include "layers/image_data_layer.h"
#include "layers/infogain_loss_layer.h"
#include "layers/inner_product_layer.h"
#include "layers/input_layer.h"
#include "layers/lrn_layer.h"
#include "layers/memory_data_layer.h"
#include "layers/multinomial_logistic_loss_layer.h"
#include "layers/mvn_layer.h"
#include "layers/parameter_layer.h"
#include "layers/pooling_layer.h"
#include "layers/prelu_layer.h"
#include "layers/reduction_layer.h"
#include "layers/reshape_layer.h"
#include "layers/scale_layer.h"
#include "layers/sigmoid_cross_entropy_loss_layer.h"
#include "layers/silence_layer.h"
#include "layers/slice_layer.h"
#include "layers/softmax_layer.h"
#include "layers/softmax_with_loss_layer.h"
#include "layers/split_layer.h"
#include "layers/spp_layer.h"
#include "layers/tile_layer.h"
#include "layers/window_data_layer.h"

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
    {"AbsVal", &make<ActivationLayer, Dtype>},
    {"Accuracy", &make<AccuracyLayer, Dtype>},
    {"ArgMax", &make<ArgMaxLayer, Dtype>},
    {"BNLL", &make<ActivationLayer, Dtype>},
    {"BatchNorm", &make<BatchNormLayer, Dtype>},
    {"BatchReindex", &make<BatchReindexLayer, Dtype>},
    {"Bias", &make<BiasLayer, Dtype>},
    {"Clip", &make<ActivationLayer, Dtype>},
    {"Concat", &make<ConcatLayer, Dtype>},
    {"ContrastiveLoss", &make<ContrastiveLossLayer, Dtype>},
    {"Convolution", &make<ConvolutionLayer, Dtype>},
    {"Crop", &make<CropLayer, Dtype>},
    {"Data", &make<DataLayer, Dtype>},
    {"Deconvolution", &make<DeconvolutionLayer, Dtype>},
    {"Dropout", &make<DropoutLayer, Dtype>},
    {"DummyData", &make<DummyDataLayer, Dtype>},
    {"ELU", &make<ActivationLayer, Dtype>},
    {"Eltwise", &make<EltwiseLayer, Dtype>},
    {"Embed", &make<EmbedLayer, Dtype>},
    {"EuclideanLoss", &make<EuclideanLossLayer, Dtype>},
    {"Exp", &make<ActivationLayer, Dtype>},
    {"Filter", &make<FilterLayer, Dtype>},
    {"Flatten", &make<FlattenLayer, Dtype>},
    {"HDF5Data", &make<Hdf5DataLayer, Dtype>},
    {"HDF5Output", &make<Hdf5OutputLayer, Dtype>},
    {"HingeLoss", &make<HingeLossLayer, Dtype>},
    {"Im2col", &make<Im2colLayer, Dtype>},
    {"ImageData", &make<ImageDataLayer, Dtype>},
    {"InfogainLoss", &make<InfogainLossLayer, Dtype>},
    {"InnerProduct", &make<InnerProductLayer, Dtype>},
    {"Input", &make<InputLayer, Dtype>},
    {"LRN", &make<LrnLayer, Dtype>},
    {"Log", &make<ActivationLayer, Dtype>},
    {"MVN", &make<MvnLayer, Dtype>},
    {"MemoryData", &make<MemoryDataLayer, Dtype>},
    {"MultinomialLogisticLoss", &make<MultinomialLogisticLossLayer, Dtype>},
    {"PReLU", &make<PreluLayer, Dtype>},
    {"Parameter", &make<ParameterLayer, Dtype>},
    {"Pooling", &make<PoolingLayer, Dtype>},
    {"Power", &make<ActivationLayer, Dtype>},
    {"ReLU", &make<ActivationLayer, Dtype>},
    {"Reduction", &make<ReductionLayer, Dtype>},
    {"Reshape", &make<ReshapeLayer, Dtype>},
    {"SPP", &make<SppLayer, Dtype>},
    {"Scale", &make<ScaleLayer, Dtype>},
    {"Sigmoid", &make<ActivationLayer, Dtype>},
    {"SigmoidCrossEntropyLoss", &make<SigmoidCrossEntropyLossLayer, Dtype>},
    {"Silence", &make<SilenceLayer, Dtype>},
    {"Slice", &make<SliceLayer, Dtype>},
    {"Softmax", &make<SoftmaxLayer, Dtype>},
    {"SoftmaxWithLoss", &make<SoftmaxWithLossLayer, Dtype>},
    {"Split", &make<SplitLayer, Dtype>},
    {"Swish", &make<ActivationLayer, Dtype>},
    {"TanH", &make<ActivationLayer, Dtype>},
    {"Threshold", &make<ActivationLayer, Dtype>},
    {"Tile", &make<TileLayer, Dtype>},
    {"WindowData", &make<WindowDataLayer, Dtype>},
};

std::mutex& external_types_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, ExternalLayerMaker>& external_types() {
  static std::map<std::string, ExternalLayerMaker> types;
  return types;
}

}  // namespace

void register_layer_type(const std::string& type, ExternalLayerMaker make) {
  std::lock_guard<std::mutex> lock(external_types_mutex());
  external_types()[type] = std::move(make);
}

template <typename Dtype>
std::unique_ptr<Layer<Dtype>> create_layer(const LayerParameter& param, Device device) {
  for (const Entry<Dtype>& e : kTable<Dtype>)
    if (param.type() == e.type) return e.factory(param, device);
  if constexpr (std::is_same_v<Dtype, float>) {
    ExternalLayerMaker make;
    {
      std::lock_guard<std::mutex> lock(external_types_mutex());
      const auto it = external_types().find(param.type());
      if (it != external_types().end()) make = it->second;
    }
    if (make) return make(param, device);
  }
  std::ostringstream known;
  const std::vector<std::string> types = layer_types();
  for (size_t i = 0; i < types.size(); ++i) known << (i ? ", " : "") << types[i];
  const std::string where =
      layer_place(param) + (param.name().empty() ? "" : "layer " + param.name() + ": ");
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

// The Net constructors that take the registry as their factory (core/net.h).
template <typename Dtype>
Net<Dtype>::Net(const NetParameter& param, Device device)
    : Net(param, device, &create_layer<Dtype>) {}

template <typename Dtype>
Net<Dtype>::Net(const NetParameter& param, Phase phase, Device device)
    : Net(param, phase, device, &create_layer<Dtype>) {}

template Net<float>::Net(const NetParameter&, Device);
template Net<double>::Net(const NetParameter&, Device);
template Net<float>::Net(const NetParameter&, Phase, Device);
template Net<double>::Net(const NetParameter&, Phase, Device);

}  // namespace crema
