// Bucketed, overlapped gradient sums.
#include "parallel/gradient_reducer.h"

#include <algorithm>
#include <numeric>

#include "core/errors.h"

namespace crema {

template <typename Dtype>
GradientReducer<Dtype>::GradientReducer(Communicator& comm, Handle& h, size_t bucket_bytes,
                                        bool overlap)
    : comm_(comm), h_(h), bucket_bytes_(bucket_bytes), overlap_(overlap) {
  if (h.device() == Device::kCUDA) comm_h_ = std::make_unique<Handle>(h.device(), h.device_id());
}

template <typename Dtype>
void GradientReducer<Dtype>::plan(Net<Dtype>& net) {
  const auto& params = net.learnable_params();
  const int n = net.num_layers();
  // A gradient is final once the backward of the first layer using it has run; the layer that
  // runs a fused layer's backward is the head of its group. A parameter no backward touches is
  // final from the start (n).
  std::vector<int> ready(params.size(), n);
  for (int i = 0; i < n; ++i) {
    const int runner = net.absorbed_by(i) >= 0 ? net.absorbed_by(i) : i;
    if (!net.layer_need_backward()[size_t(runner)]) continue;
    for (const auto& blob : net.layers()[size_t(i)]->blobs())
      for (size_t p = 0; p < params.size(); ++p)
        if (blob->diff() == params[p]->diff()) ready[p] = std::min(ready[p], runner);
  }
  std::vector<int> order(params.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return ready[a] > ready[b]; });
  size_t bytes = 0;
  for (int p : order) {
    if (bucket_params_.empty() || bytes >= bucket_bytes_) {
      bucket_params_.emplace_back();
      bucket_buffers_.emplace_back();
      bucket_ready_.push_back(n);
      bytes = 0;
    }
    bucket_params_.back().push_back(p);
    bucket_buffers_.back().push_back(
        {params[size_t(p)]->mutable_diff(), params[size_t(p)]->count()});
    bucket_ready_.back() = overlap_ ? ready[size_t(p)] : 0;
    bytes += params[size_t(p)]->bytes();
  }
}

template <typename Dtype>
void GradientReducer<Dtype>::launch(int bucket) {
  if (!comm_h_) {
    comm_.all_reduce_sum(h_, dtype_of<Dtype>(), bucket_buffers_[size_t(bucket)]);
    return;
  }
  ready_.record(h_);
  ready_.wait(*comm_h_);
  comm_.all_reduce_sum(*comm_h_, dtype_of<Dtype>(), bucket_buffers_[size_t(bucket)]);
}

template <typename Dtype>
void GradientReducer<Dtype>::backward(Net<Dtype>& net) {
  if (bucket_params_.empty() && !net.learnable_params().empty()) plan(net);
  int next = 0;  // buckets launch in plan order
  const int buckets = int(bucket_params_.size());
  const auto launch_ready = [&](int done_down_to) {
    for (; next < buckets && bucket_ready_[size_t(next)] >= done_down_to; ++next) launch(next);
  };
  launch_ready(net.num_layers());
  for (int i = net.num_layers() - 1; i >= 0; --i) {
    if (net.absorbed_by(i) >= 0) continue;
    net.backward_range(h_, net.group_end(i), i);
    launch_ready(i);
  }
  CREMA_REQUIRE(next == buckets, "gradient buckets left unsent");
  if (comm_h_) {
    done_.record(*comm_h_);
    done_.wait(h_);
  }
}

template <typename Dtype>
void GradientReducer<Dtype>::broadcast_params(Net<Dtype>& net) {
  std::vector<CommBuffer> weights;
  for (Tensor<Dtype>* p : net.learnable_params())
    weights.push_back({p->mutable_data(), p->count()});
  comm_.broadcast(h_, dtype_of<Dtype>(), weights, 0);
}

template class GradientReducer<float>;
template class GradientReducer<double>;

}  // namespace crema
