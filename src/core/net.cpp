// Net construction, forward and backward (weight I/O: net_weights.cpp).
#include "core/net.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>

#include "core/errors.h"
#include "core/net_graph.h"
#include "core/precision.h"
#include "primitives/blas.h"

namespace crema {
namespace {

// Re-throws an error from a layer with the layer named, unless it already names it.
template <typename Dtype>
[[noreturn]] void rethrow_in_layer(const Layer<Dtype>& layer, const std::exception& e) {
  const std::string prefix =
      Error::one_line(layer_place(layer.param()) + "layer " + layer.name() + " ");
  const std::string what = e.what();
  if (what.rfind(prefix, 0) == 0) throw Error(what);
  fail(layer_label(layer.param(), layer.type()), ": ", what);
}

// The Net tags the primitives it queues with the layer's address, so that an error the GPU
// reports late (prim::DeferredError, raised where the host next waits) names the layer that
// queued the failing primitive rather than the one running when it surfaced.
template <typename Dtype>
uint64_t error_tag_of(const Layer<Dtype>& layer) {
  return uint64_t(reinterpret_cast<uintptr_t>(&layer));
}

template <typename Dtype>
const Layer<Dtype>& layer_of_error(const std::vector<std::unique_ptr<Layer<Dtype>>>& layers,
                                   const Layer<Dtype>& running, const std::exception& e) {
  if (const auto* late = dynamic_cast<const prim::DeferredError*>(&e))
    for (const auto& layer : layers)
      if (error_tag_of(*layer) == late->tag()) return *layer;
  return running;
}

}  // namespace

template <typename Dtype>
Net<Dtype>::Net(const NetParameter& param, Device device, LayerFactory<Dtype> make_layer)
    : device_(device), make_layer_(make_layer) {
  init(param);
}

template <typename Dtype>
Net<Dtype>::Net(const NetParameter& param, Phase phase, Device device,
                LayerFactory<Dtype> make_layer)
    : device_(device), make_layer_(make_layer) {
  NetParameter p(param);
  p.mutable_state()->set_phase(phase);
  init(p);
}

template <typename Dtype>
void Net<Dtype>::init(const NetParameter& in) {
  phase_ = in.state().phase();
  const NetParameter param = insert_splits(filter_net(in));
  name_ = param.name();
  LOG(INFO) << "Initializing net " << name_ << " (" << (phase_ == TRAIN ? "TRAIN" : "TEST")
            << ") from parameters";
  std::map<std::string, int> available;
  for (int i = 0; i < param.layer_size(); ++i) {
    LayerParameter lp = param.layer(i);
    if (!lp.has_phase()) lp.set_phase(phase_);
    resolve_layer_precision(param, &lp);
    append_layer(lp, i, &available);
  }
  decide_backward(param);
  hand_over_loss_weights();
  link_kept_inputs();
  fuse_layers(true);
  plan_half_storage();
  for (const auto& [blob_name, id] : available) {
    output_blobs_.push_back(blobs_[id].get());
    output_names_.push_back(blob_name);
    output_weights_.push_back(blob_loss_weights_[id]);
  }
  for (const auto& n : output_names_) LOG(INFO) << "This network produces output " << n;
  LOG(INFO) << "Memory required for data: " << activation_bytes();
  LOG(INFO) << "Network initialization done.";
}

template <typename Dtype>
void Net<Dtype>::check_loss_scale(double scale) const {
  CREMA_REQUIRE(scale > 0 && std::isfinite(scale), "net ", name_, ": the loss scale must be a ",
                "positive finite number, got ", scale);
  for (size_t id = 0; id < blobs_.size(); ++id)
    CREMA_REQUIRE(std::isfinite(Dtype(double(blob_loss_weights_[id]) * scale)), "net ", name_,
                  ": loss weight ", blob_loss_weights_[id], " times loss scale ", scale,
                  " overflows the gradients' type");
}

template <typename Dtype>
void Net<Dtype>::set_loss_scale(Handle& h, double scale) {
  check_loss_scale(scale);
  loss_scale_ = scale;
  for (size_t id = 0; id < blobs_.size(); ++id) {
    if (blob_loss_weights_[id] == 0) continue;
    Tensor<Dtype>& top = *blobs_[id];
    prim::fill(h, dtype_of<Dtype>(), top.count(), double(blob_loss_weights_[id]) * scale,
               top.mutable_diff());
  }
  hand_over_loss_weights();
}

// A loss top that no layer reads keeps the weight the Net wrote into its diff, so its layer may
// take the value from the host (Layer::top_loss_weight says why).
template <typename Dtype>
void Net<Dtype>::hand_over_loss_weights() {
  std::set<int> read;
  for (const auto& ids : bottom_ids_) read.insert(ids.begin(), ids.end());
  for (int i = 0; i < num_layers(); ++i)
    for (int j = 0; j < int(top_ids_[i].size()); ++j) {
      const int id = top_ids_[i][j];
      if (blob_loss_weights_[id] != 0 && !read.count(id))
        layers_[i]->set_top_loss_weight(j, double(blob_loss_weights_[id]) * loss_scale_);
    }
}

// An in-place layer that keeps its input for backward (Scale) can use the copy that the last
// layer to write that blob keeps of it (BatchNorm in training): in a ResNet's conv, BatchNorm,
// Scale chains, one copy of each normalized activation instead of two.
template <typename Dtype>
void Net<Dtype>::link_kept_inputs() {
  for (int i = 0; i < num_layers(); ++i)
    for (size_t j = 0; j < bottom_ids_[size_t(i)].size(); ++j) {
      const int id = bottom_ids_[size_t(i)][j];
      const auto& own = top_ids_[size_t(i)];
      if (std::find(own.begin(), own.end(), id) == own.end()) continue;  // not in place
      for (int p = i - 1; p >= 0; --p) {
        const auto& tops = top_ids_[size_t(p)];
        const auto at = std::find(tops.begin(), tops.end(), id);
        if (at == tops.end()) continue;
        const Tensor<Dtype>* kept = layers_[size_t(p)]->kept_top(int(at - tops.begin()));
        if (kept && layers_[size_t(i)]->use_kept_bottom(int(j), kept))
          LOG(INFO) << layer_names_[size_t(i)] << " uses " << layer_names_[size_t(p)]
                    << "'s copy of " << blob_names_[size_t(id)];
        break;  // only the last writer's copy holds the values this layer receives
      }
    }
}

// Offers each layer the layers right after it that compute in place on one of its tops, while
// it takes them. With backward, not offered: a layer that needs backward after one that does not
// (the group runs backward as its head, or not at all). Never offered: a blob with a loss weight
// (each layer's loss read would see the group's result).
template <typename Dtype>
void Net<Dtype>::fuse_layers(bool backward) {
  absorbed_by_.assign(layers_.size(), -1);
  for (int i = 0; i < num_layers(); ++i) {
    if (absorbed_by_[size_t(i)] >= 0) continue;
    const auto& tops = top_ids_[size_t(i)];
    const bool head_backward = backward && layer_need_backward_[size_t(i)];
    for (int j = i + 1; j < num_layers(); ++j) {
      const auto& b = bottom_ids_[size_t(j)];
      if (b.size() != 1 || top_ids_[size_t(j)] != b ||
          std::find(tops.begin(), tops.end(), b[0]) == tops.end() ||
          blob_loss_weights_[size_t(b[0])] != 0 ||
          (backward && layer_need_backward_[size_t(j)] && !head_backward) ||
          !layers_[size_t(i)]->absorb(*layers_[size_t(j)], head_backward))
        break;
      absorbed_by_[size_t(j)] = i;
      LOG(INFO) << layer_names_[size_t(j)] << " runs fused into " << layer_names_[size_t(i)];
    }
  }
}

template <typename Dtype>
int Net<Dtype>::group_end(int i) const {
  int j = i + 1;
  while (j < num_layers() && absorbed_by_[size_t(j)] == i) ++j;
  return j - 1;
}

template <typename Dtype>
void Net<Dtype>::release_group(int head) {
  layers_[size_t(head)]->release_absorbed();
  for (int& by : absorbed_by_)
    if (by == head) by = -1;
}

template <typename Dtype>
void Net<Dtype>::unfuse() {
  for (int i = 0; i < num_layers(); ++i)
    if (group_end(i) > i) release_group(i);
}

// Layers [lo, hi] are about to run: a group reaching outside them runs apart from now on.
template <typename Dtype>
void Net<Dtype>::keep_groups_whole(int lo, int hi) {
  for (int i = std::max(lo, 0); i <= hi && i < num_layers(); ++i) {
    const int head = absorbed_by_[size_t(i)] >= 0 ? absorbed_by_[size_t(i)] : i;
    if (head >= lo && group_end(head) <= hi) continue;
    LOG(INFO) << "Layers " << layer_names_[size_t(head)] << " to "
              << layer_names_[size_t(group_end(head))]
              << " run apart from now on: a forward or backward over part of the net splits them";
    release_group(head);
  }
}

template <typename Dtype>
void Net<Dtype>::append_layer(const LayerParameter& lp, int layer_id,
                              std::map<std::string, int>* available) {
  layers_.push_back(make_layer_(lp, device_));
  Layer<Dtype>& layer = *layers_.back();
  layer_names_.push_back(lp.name());
  LOG(INFO) << "Creating Layer " << lp.name();
  bottom_vecs_.emplace_back();
  bottom_ids_.emplace_back();
  top_vecs_.emplace_back();
  top_ids_.emplace_back();
  for (int j = 0; j < lp.bottom_size(); ++j) {
    const auto it = available->find(lp.bottom(j));
    if (it == available->end())
      fail(layer_label(lp), ": bottom \"", lp.bottom(j), "\" is not produced by any earlier layer");
    LOG(INFO) << lp.name() << " <- " << lp.bottom(j);
    bottom_vecs_.back().push_back(blobs_[it->second].get());
    bottom_ids_.back().push_back(it->second);
    available->erase(it);
  }
  const auto add_top = [&](const std::string& top_name) {
    int id = -1;
    for (int j = 0; j < lp.bottom_size(); ++j)
      if (lp.bottom(j) == top_name) id = bottom_ids_.back()[j];  // computed in place
    if (id < 0) {
      if (blob_index_.count(top_name))
        fail(layer_label(lp), ": top \"", top_name, "\" is already produced by another layer");
      id = int(blobs_.size());
      blobs_.push_back(std::make_shared<Tensor<Dtype>>(device_));
      blob_names_.push_back(top_name);
      blob_need_backward_.push_back(false);
      blob_loss_weights_.push_back(Dtype(0));
      blob_index_[top_name] = id;
    }
    LOG(INFO) << lp.name() << " -> " << top_name;
    top_vecs_.back().push_back(blobs_[id].get());
    top_ids_.back().push_back(id);
    (*available)[top_name] = id;
  };
  for (int j = 0; j < lp.top_size(); ++j) add_top(lp.top(j));
  if (layer.auto_top_blobs()) {
    const int needed = layer.signature().tops.min;
    for (int j = lp.top_size(); j < needed; ++j)
      add_top(j == 0 ? lp.name() : lp.name() + "_" + std::to_string(j));
  }
  LOG(INFO) << "Setting up " << lp.name();
  try {
    layer.setup(bottom_vecs_.back(), top_vecs_.back());
  } catch (const std::exception& e) {
    rethrow_in_layer(layer, e);
  }
  for (int j = 0; j < int(top_vecs_.back().size()); ++j) {
    Tensor<Dtype>* top = top_vecs_.back()[j];
    LOG(INFO) << "Top shape: " << top->shape_string();
    const double weight = j < lp.loss_weight_size()   ? lp.loss_weight(j)
                          : layer.is_loss() && j == 0 ? 1.0
                                                      : 0.0;
    if (weight != 0) {
      LOG(INFO) << "    with loss weight " << weight;
      blob_loss_weights_[top_ids_.back()[j]] = Dtype(weight);
      top->fill_diff(Dtype(weight));
    }
  }
  append_params(lp, layer_id);
}

template <typename Dtype>
void Net<Dtype>::append_params(const LayerParameter& lp, int layer_id) {
  Layer<Dtype>& layer = *layers_[layer_id];
  // The layer's own copy of its parameters: a layer may fix specs during setup (BatchNorm's
  // statistics always get lr_mult 0).
  const LayerParameter& lp_final = layer.param();
  for (int k = 0; k < int(layer.blobs().size()); ++k) {
    const ParamSpec spec = k < lp_final.param_size() ? lp_final.param(k) : ParamSpec();
    const auto& blob = layer.blobs()[k];
    const int param_id = int(params_.size());
    params_.push_back(blob);
    param_layer_indices_.push_back({layer_id, k});
    layer.set_param_propagate_down(k, spec.lr_mult() != 0);
    const auto shared =
        spec.name().empty() ? param_name_index_.end() : param_name_index_.find(spec.name());
    if (shared == param_name_index_.end()) {
      if (!spec.name().empty()) param_name_index_[spec.name()] = param_id;
      param_owners_.push_back(-1);
      learnable_params_.push_back(blob.get());
      params_lr_.push_back(spec.lr_mult());
      params_decay_.push_back(spec.decay_mult());
      continue;
    }
    const int owner_id = shared->second;
    const Tensor<Dtype>& owner = *params_[owner_id];
    const bool strict = spec.share_mode() != ParamSpec::PERMISSIVE;
    const bool same = strict ? owner.shape() == blob->shape() : owner.count() == blob->count();
    CREMA_REQUIRE(same, layer_place(lp), "layer ", lp.name(), ": shared parameter \"", spec.name(),
                  "\" has shape (", blob->shape_string(), ") but its owner has (",
                  owner.shape_string(), ")");
    int learnable_id = 0;
    for (int p = 0; p < owner_id; ++p) learnable_id += param_owners_[p] < 0;
    CREMA_REQUIRE(!spec.has_lr_mult() || spec.lr_mult() == params_lr_[learnable_id],
                  layer_place(lp), "layer ", lp.name(), ": shared parameter \"", spec.name(),
                  "\" has a different lr_mult");
    CREMA_REQUIRE(!spec.has_decay_mult() || spec.decay_mult() == params_decay_[learnable_id],
                  layer_place(lp), "layer ", lp.name(), ": shared parameter \"", spec.name(),
                  "\" has a different decay_mult");
    param_owners_.push_back(owner_id);
    blob->share_data(owner);
    blob->share_diff(owner);
  }
}

template <typename Dtype>
void Net<Dtype>::decide_backward(const NetParameter& param) {
  const int n = num_layers();
  layer_need_backward_.assign(n, false);
  bottom_need_backward_.assign(n, {});
  for (int i = 0; i < n; ++i) {
    const LayerParameter& lp = param.layer(i);
    const int nb = int(bottom_ids_[i].size());
    CREMA_REQUIRE(lp.propagate_down_size() == 0 || lp.propagate_down_size() == nb, "layer ",
                  lp.name(), ": give propagate_down for none or all ", nb, " bottoms");
    bool need = false;
    for (int j = 0; j < nb; ++j) {
      bool b = blob_need_backward_[bottom_ids_[i][j]];
      if (lp.propagate_down_size() > 0) b = b && lp.propagate_down(j);
      bottom_need_backward_[i].push_back(b);
      need = need || b;
    }
    for (int k = 0; k < int(layers_[i]->blobs().size()); ++k)
      need = need || layers_[i]->param_propagate_down(k);
    layer_need_backward_[i] = need;
    if (need)
      for (int id : top_ids_[i]) blob_need_backward_[id] = true;
  }
  // Walk back from the losses: a layer none of whose tops reaches a loss needs no backward.
  std::set<std::string> under_loss, skip;
  for (int i = n - 1; i >= 0; --i) {
    bool contributes = false, skip_all = true;
    for (int j = 0; j < int(top_ids_[i].size()); ++j) {
      const int id = top_ids_[i][j];
      const std::string& name = blob_names_[id];
      if (blob_loss_weights_[id] != 0 || under_loss.count(name)) contributes = true;
      if (!skip.count(name)) skip_all = false;
    }
    if (top_ids_[i].empty()) skip_all = false;
    if (layer_need_backward_[i] && skip_all) {
      layer_need_backward_[i] = false;
      bottom_need_backward_[i].assign(bottom_ids_[i].size(), false);
    }
    if (!contributes) layer_need_backward_[i] = false;
    for (int j = 0; j < int(bottom_ids_[i].size()); ++j) {
      const std::string& name = blob_names_[bottom_ids_[i][j]];
      if (contributes) {
        under_loss.insert(name);
      } else {
        bottom_need_backward_[i][j] = false;
      }
      if (!bottom_need_backward_[i][j]) skip.insert(name);
    }
  }
  if (param.force_backward()) {
    for (int i = 0; i < n; ++i) {
      layer_need_backward_[i] = true;
      for (int j = 0; j < int(bottom_ids_[i].size()); ++j) {
        const bool b = bottom_need_backward_[i][j] || layers_[i]->allow_force_backward(j);
        bottom_need_backward_[i][j] = b;
        if (b) blob_need_backward_[bottom_ids_[i][j]] = true;
      }
    }
  }
  for (int i = 0; i < n; ++i)
    LOG(INFO) << layer_names_[i]
              << (layer_need_backward_[i] ? " needs backward computation."
                                          : " does not need backward computation.");
}

template <typename Dtype>
Dtype Net<Dtype>::forward(Handle& h) {
  return forward_range(h, 0, num_layers() - 1);
}

template <typename Dtype>
void Net<Dtype>::fill_inputs_uniform(uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (int i = 0; i < num_layers(); ++i) {
    if (std::string(layers_[i]->type()) != "Input") continue;
    for (Tensor<Dtype>* top : top_vecs_[i]) {
      std::vector<Dtype> v(size_t(top->count()));
      for (auto& x : v) x = Dtype(dist(gen));
      top->set_data(v);
    }
  }
}

template <typename Dtype>
Dtype Net<Dtype>::forward_range(Handle& h, int start, int end) {
  queue_forward_range(h, start, end);
  return read_loss(h);
}

template <typename Dtype>
void Net<Dtype>::queue_forward_range(Handle& h, int start, int end, bool sum_loss) {
  if (!loss_sum_.get()) loss_sum_ = prim::DeviceBuffer(device_, sizeof(double));
  double* loss = static_cast<double*>(loss_sum_.get());
  bool summed = false;  // whether *loss holds a term yet
  keep_groups_whole(start, end);
  for (int i = start; i <= end; ++i) {
    Layer<Dtype>& layer = *layers_[i];
    h.set_error_tag(error_tag_of(layer));
    try {
      // As Caffe, every forward first fits the tops to the bottoms: inputs may change shape
      // between iterations (Filter, data of varying size).
      layer.reshape(bottom_vecs_[i], top_vecs_[i]);
      if (absorbed_by_[size_t(i)] >= 0) continue;  // its group's head ran it
      layer.forward(h, bottom_vecs_[i], top_vecs_[i]);
      // A loss top's diff holds its weight times the loss scale.
      for (int id : top_ids_[i]) {
        if (blob_loss_weights_[id] == 0 || !sum_loss) continue;
        const Tensor<Dtype>& top = *blobs_[id];
        prim::dot_into(h, dtype_of<Dtype>(), top.count(), top.data(), top.diff(), 1.0 / loss_scale_,
                       summed ? 1.0 : 0.0, loss);
        summed = true;
      }
    } catch (const std::exception& e) {
      rethrow_in_layer(layer_of_error(layers_, layer, e), e);
    }
  }
  if (!summed && sum_loss) prim::fill(h, prim::DataType::kFloat64, 1, 0.0, loss);
}

template <typename Dtype>
Dtype Net<Dtype>::read_loss(Handle& h) {
  if (loss_host_.empty()) loss_host_.resize(1);
  prim::memcpy_async(h, loss_host_.data(), Device::kCPU, loss_sum_.get(), device_, sizeof(double));
  wait(h);
  return Dtype(loss_host_[0]);
}

template <typename Dtype>
void Net<Dtype>::wait(Handle& h) const {
  try {
    h.synchronize();
  } catch (const prim::DeferredError& e) {
    for (const auto& layer : layers_)
      if (error_tag_of(*layer) == e.tag()) rethrow_in_layer(*layer, e);
    throw;
  }
}

template <typename Dtype>
void Net<Dtype>::clear_param_diffs(Handle& h) {
  // One list fill: on a GPU one launch instead of one per parameter.
  std::vector<prim::FillTarget> diffs;
  for (Tensor<Dtype>* p : learnable_params_) diffs.push_back({p->count(), p->mutable_diff()});
  prim::fill(h, dtype_of<Dtype>(), 0.0, diffs.data(), diffs.size());
}

template <typename Dtype>
void Net<Dtype>::backward(Handle& h) {
  backward_range(h, num_layers() - 1, 0);
}

template <typename Dtype>
void Net<Dtype>::backward_range(Handle& h, int start, int end) {
  keep_groups_whole(end, start);
  for (int i = start; i >= end; --i) {
    if (!layer_need_backward_[i] || absorbed_by_[size_t(i)] >= 0) continue;
    h.set_error_tag(error_tag_of(*layers_[i]));
    try {
      layers_[i]->backward(h, top_vecs_[i], bottom_need_backward_[i], bottom_vecs_[i]);
    } catch (const std::exception& e) {
      rethrow_in_layer(layer_of_error(layers_, *layers_[i], e), e);
    }
  }
}

template <typename Dtype>
std::string Net<Dtype>::learnable_param_label(int id) const {
  for (size_t k = 0; k < params_.size(); ++k) {
    if (param_owners_[k] >= 0 || id-- > 0) continue;
    const auto [layer, blob] = param_layer_indices_[k];
    return "layer " + layer_names_[size_t(layer)] + ", blob " + std::to_string(blob);
  }
  return "parameter " + std::to_string(id);
}

template <typename Dtype>
void Net<Dtype>::reshape() {
  for (int i = 0; i < num_layers(); ++i) {
    try {
      layers_[i]->reshape(bottom_vecs_[i], top_vecs_[i]);
    } catch (const std::exception& e) {
      rethrow_in_layer(*layers_[i], e);
    }
  }
}

template <typename Dtype>
typename Net<Dtype>::TensorPtr Net<Dtype>::blob_by_name(const std::string& name) const {
  const auto it = blob_index_.find(name);
  CREMA_REQUIRE(it != blob_index_.end(), "net ", name_, " has no blob \"", name, "\"");
  return blobs_[it->second];
}

template <typename Dtype>
Layer<Dtype>* Net<Dtype>::layer_by_name(const std::string& name) const {
  for (int i = 0; i < num_layers(); ++i)
    if (layer_names_[i] == name) return layers_[i].get();
  fail("net ", name_, " has no layer \"", name, "\"");
}

template <typename Dtype>
size_t Net<Dtype>::activation_bytes() const {
  size_t total = 0;
  for (const auto& b : blobs_) total += b->bytes();
  return total;
}

template <typename Dtype>
size_t Net<Dtype>::param_bytes() const {
  size_t total = 0;
  for (const auto* p : learnable_params_) total += p->bytes();
  return total;
}

template class Net<float>;
template class Net<double>;

}  // namespace crema
