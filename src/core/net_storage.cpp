// Half-size storage of a net's activations (storage_plan.h): the plan over the layers' support
// and types, applied before any activation is allocated.
#include <glog/logging.h>

#include <string>
#include <type_traits>

#include "core/net.h"
#include "core/precision.h"

namespace crema {
namespace {

// The half type a layer's forward and backward types both name, else f32.
prim::DataType half_type_of(const LayerParameter& lp) {
  if (lp.forward_type() != lp.backward_type()) return prim::DataType::kFloat32;
  if (lp.forward_type() == BFLOAT16) return prim::DataType::kBFloat16;
  if (lp.forward_type() == FLOAT16) return prim::DataType::kFloat16;
  return prim::DataType::kFloat32;
}

}  // namespace

// On a GPU, every blob the plan stores in half size gets that storage, and every layer is
// reshaped again so that its internal buffers and shared views follow its blobs. Layers that ask
// for half storage (forward_type or backward_type FLOAT16 or BFLOAT16) and have none of their tops
// so stored are logged once.
template <typename Dtype>
void Net<Dtype>::plan_half_storage() {
  size_t half = 0;
  if (device_ == Device::kCUDA && std::is_same_v<Dtype, float>) {
    std::vector<StorageLayer> plan(layers_.size());
    for (size_t i = 0; i < layers_.size(); ++i)
      plan[i] = StorageLayer{layers_[i]->half_storage(), half_type_of(layers_[i]->param()),
                             bottom_ids_[i], top_ids_[i]};
    std::vector<bool> keep_f32(blobs_.size());
    for (size_t id = 0; id < blobs_.size(); ++id) keep_f32[id] = blob_loss_weights_[id] != 0;
    const std::vector<prim::DataType> types = plan_storage(plan, keep_f32);
    for (size_t id = 0; id < blobs_.size(); ++id) {
      if (types[id] == prim::DataType::kFloat32) continue;
      blobs_[id]->set_storage(types[id]);
      ++half;
    }
    if (half) {
      reshape();
      LOG(INFO) << "Half-precision storage: " << half << " of " << blobs_.size()
                << " activations (data and gradients) in bf16 or f16";
    }
  }
  std::string f32_layers;
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (!layer_wants_half_storage(layers_[i]->param())) continue;
    bool any_half = false;
    for (const int id : top_ids_[i])
      any_half = any_half || blobs_[size_t(id)]->storage() != prim::DataType::kFloat32;
    if (!any_half) f32_layers += (f32_layers.empty() ? "" : ", ") + layer_names_[i];
  }
  if (!f32_layers.empty())
    LOG(WARNING) << "Half-precision storage (forward_type/backward_type FLOAT16 or BFLOAT16) "
                 << (device_ == Device::kCPU ? "is GPU-only" : "is not available to all layers")
                 << ": these layers store FLOAT, and their math follows the request: "
                 << f32_layers;
}

template <typename Dtype>
int Net<Dtype>::set_channels_last(bool on) {
  std::vector<bool> candidates(blobs_.size(), false);
  if (on && device_ == Device::kCUDA && std::is_same_v<Dtype, float>)
    for (size_t id = 0; id < blobs_.size(); ++id) {
      const Tensor<Dtype>& b = *blobs_[id];
      candidates[id] = b.num_axes() == 4 && b.height() * b.width() > 1;
    }
  std::vector<StorageLayer> plan(layers_.size());
  for (size_t i = 0; i < layers_.size(); ++i)
    plan[i] = StorageLayer{layers_[i]->channels_last(), prim::DataType::kFloat32, bottom_ids_[i],
                           top_ids_[i]};
  const std::vector<bool> nhwc = plan_channels_last(plan, candidates);
  int count = 0;
  for (size_t id = 0; id < blobs_.size(); ++id) {
    blobs_[id]->set_channels_last(nhwc[id]);
    count += nhwc[id] ? 1 : 0;
  }
  reshape();
  if (on)
    LOG(INFO) << "Channels-last storage: " << count << " of " << blobs_.size() << " activations";
  return count;
}

template void Net<float>::plan_half_storage();
template void Net<double>::plan_half_storage();
template int Net<float>::set_channels_last(bool);
template int Net<double>::set_channels_last(bool);

}  // namespace crema
