// StepGraph: the data layers run eagerly, the rest of the step is replayed from a CUDA graph.
#include "solver/step_graph.h"

#include <glog/logging.h>

#include <exception>

namespace crema {

template <typename Dtype>
std::string StepGraph<Dtype>::unsupported(const Net<Dtype>& net) {
  bool fed = false;
  for (int i = 0; i < net.num_layers(); ++i) {
    const Layer<Dtype>& layer = *net.layers()[size_t(i)];
    const std::string who = "layer " + layer.name() + " (" + layer.type() + ")";
    if (const char* why = layer.not_replayable()) return who + " " + why;
    if (!net.bottom_vecs()[size_t(i)].empty())
      fed = true;
    else if (fed)
      return who + " has no bottoms but follows layers that have";
  }
  return "";
}

template <typename Dtype>
StepGraph<Dtype>::StepGraph(Net<Dtype>& net) : net_(net) {
  while (first_fed_ < net.num_layers() && net.bottom_vecs()[size_t(first_fed_)].empty())
    ++first_fed_;
  for (int i = 0; i < first_fed_; ++i)
    for (const Tensor<Dtype>* top : net.top_vecs()[size_t(i)]) data_tops_.push_back(top);
  recorded_shapes_.resize(data_tops_.size());
}

// Compared in place: run() asks every step, and copying the shapes would allocate each time.
template <typename Dtype>
bool StepGraph<Dtype>::data_shapes_changed() const {
  for (size_t k = 0; k < data_tops_.size(); ++k)
    if (data_tops_[k]->shape() != recorded_shapes_[k]) return true;
  return false;
}

template <typename Dtype>
void StepGraph<Dtype>::queue_step(Handle& h) {
  net_.clear_param_diffs(h);
  net_.queue_forward_range(h, first_fed_, net_.num_layers() - 1);
  net_.backward(h);
}

template <typename Dtype>
void StepGraph<Dtype>::run(Handle& h) {
  if (first_fed_ > 0) net_.queue_forward_range(h, 0, first_fed_ - 1, /*sum_loss=*/false);
  // The first step runs eagerly: it allocates the activations and workspace and settles the
  // algorithms, none of which a recording may do.
  if (failed_ || ++steps_ == 1 || first_fed_ == net_.num_layers()) {
    queue_step(h);
    return;
  }
  if (!graph_.recorded() || data_shapes_changed() ||
      h.workspace_generation() != recorded_workspace_) {
    try {
      graph_.record(h, [&] { queue_step(h); });
    } catch (const std::exception& e) {
      failed_ = true;
      LOG(INFO) << "CUDA graph off, the step runs layer by layer: " << e.what();
      queue_step(h);
      return;
    }
    ++recordings_;
    for (size_t k = 0; k < data_tops_.size(); ++k) recorded_shapes_[k] = data_tops_[k]->shape();
    recorded_workspace_ = h.workspace_generation();
    LOG(INFO) << "Training step recorded as a CUDA graph of " << graph_.nodes()
              << " operations (layers " << net_.layer_names()[size_t(first_fed_)] << " to "
              << net_.layer_names().back() << ")";
  }
  graph_.replay(h);
}

template class StepGraph<float>;
template class StepGraph<double>;

}  // namespace crema
