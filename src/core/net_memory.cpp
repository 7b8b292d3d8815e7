// Net::share_activation_memory (training) and share_inference_memory (forward only): a net's
// activations share one arena by lifetime (core/memory_plan.h places them).
//
// Steps: step i < n is layer i's forward, step 2n - 1 - i its backward. An activation's data
// lives from the forward of the first layer that writes it to the last step that reads it: a
// forward that takes it as a bottom, or a backward whose layer declares that it reads it
// (Layer::bottom_data_use / top_data_use). Its gradient lives from the backward of its last
// consumer (the first to write it) to the backward of its first producer (the last to read it).
// A view (Split's tops; Flatten's and Reshape's top) is one value with the blob it views. Forward
// only, data live until their last forward read and gradients are not planned.
#include <glog/logging.h>

#include <algorithm>
#include <climits>
#include <numeric>
#include <set>

#include "core/errors.h"
#include "core/memory_plan.h"
#include "core/net.h"

namespace crema {

template <typename Dtype>
void Net<Dtype>::share_activation_memory() {
  share_memory(true);
}

template <typename Dtype>
void Net<Dtype>::share_inference_memory() {
  unfuse();
  fuse_layers(false);
  share_memory(false);
}

// backward false: no layer's backward runs, so no data lives past its last forward read and no
// gradient is planned.
template <typename Dtype>
void Net<Dtype>::share_memory(bool backward) {
  using Use = DataUse;
  const int n = num_layers();
  const size_t nb = blobs_.size();
  const auto backward_step = [n](int i) { return 2 * n - 1 - i; };

  // Layers run in order, so a view's bottom already points at its own root.
  std::vector<size_t> data_root(nb), diff_root(nb);
  std::iota(data_root.begin(), data_root.end(), size_t(0));
  std::iota(diff_root.begin(), diff_root.end(), size_t(0));
  for (int i = 0; i < n; ++i)
    for (size_t j = 0; j < top_ids_[size_t(i)].size(); ++j) {
      const size_t id = size_t(top_ids_[size_t(i)][j]);
      const Layer<Dtype>& layer = *layers_[size_t(i)];
      if (const int b = layer.data_view_of(int(j)); b >= 0)
        data_root[id] = data_root[size_t(bottom_ids_[size_t(i)][size_t(b)])];
      if (const int b = layer.diff_view_of(int(j)); b >= 0)
        diff_root[id] = diff_root[size_t(bottom_ids_[size_t(i)][size_t(b)])];
    }

  struct Value {
    int first = INT_MAX, last = -1;
    size_t bytes = 0;
    bool planned = true;
    void touch(int step) {
      first = std::min(first, step);
      last = std::max(last, step);
    }
  };
  std::vector<Value> data(nb), diff(nb);
  for (int i = 0; i < n; ++i) {
    const size_t l = size_t(i);
    const Layer<Dtype>& layer = *layers_[l];
    // Data: written or read by this layer's forward, read by its backward where it says so.
    const auto use_data = [&](size_t id, Use use) -> Value& {
      Value& d = data[data_root[id]];
      d.touch(i);
      if (backward && use == Use::kBackward && layer_need_backward_[l]) d.touch(backward_step(i));
      if (use == Use::kUnknown) d.planned = false;
      return d;
    };
    const bool input = bottom_ids_[l].empty();  // data layers fill their tops themselves
    for (size_t j = 0; j < top_ids_[l].size(); ++j) {
      const size_t id = size_t(top_ids_[l][j]);
      Value& d = use_data(id, layer.top_data_use(int(j)));
      Value& g = diff[diff_root[id]];
      g.touch(backward_step(i));
      if (input) d.planned = g.planned = false;
    }
    for (size_t j = 0; j < bottom_ids_[l].size(); ++j) {
      const size_t id = size_t(bottom_ids_[l][j]);
      use_data(id, layer.bottom_data_use(int(j)));
      // A gradient that some consumer never writes stays as allocated, zero: a Split sums all
      // its tops' diffs, also the one an Accuracy layer reads without a backward.
      Value& g = diff[diff_root[id]];
      g.touch(backward_step(i));
      if (!layer_need_backward_[l] || !bottom_need_backward_[l][j]) g.planned = false;
    }
  }
  // The caller reads the outputs and losses after forward and backward.
  std::set<const Tensor<Dtype>*> outputs(output_blobs_.begin(), output_blobs_.end());
  for (size_t k = 0; k < nb; ++k) {
    const bool kept = outputs.count(blobs_[k].get()) > 0 || blob_loss_weights_[k] != 0;
    Value& d = data[data_root[k]];
    Value& g = diff[diff_root[k]];
    d.bytes = std::max(d.bytes, blobs_[k]->bytes());
    g.bytes = std::max(g.bytes, blobs_[k]->bytes());
    if (kept) d.planned = g.planned = false;
    if (!backward || !blob_need_backward_[k]) g.planned = false;
  }

  // One arena for both: the data that backward no longer reads makes room for gradients.
  std::vector<Lifetime> lives;
  std::vector<std::pair<size_t, bool>> owners;  // (root blob, is a gradient) of each value
  size_t unshared = 0, data_values = 0;
  for (const bool gradient : {false, true})
    for (size_t k = 0; k < nb; ++k) {
      const Value& v = gradient ? diff[k] : data[k];
      if ((gradient ? diff_root[k] : data_root[k]) != k || !v.planned || v.bytes == 0) continue;
      lives.push_back({v.first, v.last, v.bytes});
      owners.emplace_back(k, gradient);
      unshared += v.bytes;
      if (!gradient) ++data_values;
    }
  if (lives.empty()) return;
  // Slices start on 512-byte boundaries: beyond cudaMalloc's 256, so kernels that take 16-byte
  // vector paths on aligned tensors still do.
  const std::vector<size_t> offsets = place_values(lives, 512);
  const size_t total = arena_bytes(lives, offsets);
  std::shared_ptr<prim::DeviceBuffer> arena;
  try {
    arena = std::make_shared<prim::DeviceBuffer>(device_, total);
  } catch (const std::bad_alloc&) {
    fail("net ", name_, ": cannot allocate ", total, " bytes for its activations");
  }
  prim::device_memset_zero(device_, arena->get(), total);
  // Each value's slice keeps the arena alive as long as a tensor holds it.
  struct Slice {
    std::shared_ptr<prim::DeviceBuffer> arena;
    prim::DeviceBuffer view;
  };
  std::vector<std::shared_ptr<prim::DeviceBuffer>> data_slice(nb), diff_slice(nb);
  for (size_t v = 0; v < owners.size(); ++v) {
    auto slice = std::make_shared<Slice>(
        Slice{arena, prim::DeviceBuffer::borrowed(
                         device_, static_cast<char*>(arena->get()) + offsets[v], lives[v].bytes)});
    (owners[v].second ? diff_slice : data_slice)[owners[v].first] =
        std::shared_ptr<prim::DeviceBuffer>(slice, &slice->view);
  }
  std::set<const prim::DeviceBuffer*> planned;
  for (size_t k = 0; k < nb; ++k) {
    if (const auto& s = data_slice[data_root[k]]) {
      blobs_[k]->share_data_buffer(s);
      planned.insert(s.get());
      arena_placed_.emplace_back(k, false);
    }
    if (const auto& s = diff_slice[diff_root[k]]) {
      blobs_[k]->share_diff_buffer(s);
      planned.insert(s.get());
      arena_placed_.emplace_back(k, true);
    }
  }
  // Every reshape re-shares the views; a tensor that takes a planned slice there without its
  // layer declaring the view would outlive the plan.
  reshape();
  for (size_t k = 0; k < nb; ++k) {
    const bool data_ok = data_slice[data_root[k]] || !planned.count(blobs_[k]->data_buffer());
    const bool diff_ok = diff_slice[diff_root[k]] || !planned.count(blobs_[k]->diff_buffer());
    if (!data_ok || !diff_ok)
      fail("net ", name_, ": blob ", blob_names_[k],
           " shares planned memory through a view its layer does not declare");
  }
  LOG(INFO) << "Activations share " << total << " bytes (" << data_values << " data and "
            << owners.size() - data_values << " gradient values of " << unshared
            << " bytes; at most " << peak_live_bytes(lives) << " live at once)";
}

template <typename Dtype>
void Net<Dtype>::own_activation_memory() {
  if (arena_placed_.empty()) return;
  // A tensor without a buffer allocates its own, zeroed, at first use; the reshape re-shares
  // the views (Split's tops, Flatten's) with their own bottoms' new memory.
  for (const auto& [blob, gradient] : arena_placed_) {
    if (gradient)
      blobs_[blob]->share_diff_buffer(nullptr);
    else
      blobs_[blob]->share_data_buffer(nullptr);
  }
  arena_placed_.clear();
  reshape();
}

template void Net<float>::own_activation_memory();
template void Net<double>::own_activation_memory();
template void Net<float>::share_activation_memory();
template void Net<double>::share_activation_memory();
template void Net<float>::share_inference_memory();
template void Net<double>::share_inference_memory();

}  // namespace crema
