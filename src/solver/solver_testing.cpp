// Solver: the test nets' passes (every test_interval iterations and at the end of training).
#include <glog/logging.h>

#include <vector>

#include "solver/solver.h"

namespace crema {

template <typename Dtype>
const std::vector<std::vector<TestScore>>& Solver<Dtype>::test_all() {
  for (int i = 0; i < int(test_nets_.size()) && !requested_early_exit_; ++i) test(i);
  return test_scores_;
}

template <typename Dtype>
void Solver<Dtype>::test(int test_net_id) {
  LOG(INFO) << "Iteration " << iter_ << ", Testing net (#" << test_net_id << ")";
  Net<Dtype>& test_net = *test_nets_[test_net_id];
  test_net.share_trained_layers_with(*net_);
  const int test_iter = param_.test_iter(test_net_id);
  std::vector<Dtype> scores;
  std::vector<int> ids;
  Dtype loss = 0;
  for (int i = 0; i < test_iter; ++i) {
    for (SolverAction request = poll_action(); request != SolverAction::kNone;
         request = poll_action()) {
      if (request == SolverAction::kSnapshot) snapshot();
      if (request == SolverAction::kStop) requested_early_exit_ = true;
    }
    if (requested_early_exit_) break;
    const Dtype iter_loss = test_net.forward(h_);
    if (param_.test_compute_loss()) loss += iter_loss;
    size_t idx = 0;
    for (size_t j = 0; j < test_net.output_blobs().size(); ++j) {
      for (Dtype v : test_net.output_blobs()[j]->data_vector()) {
        if (i == 0) {
          scores.push_back(v);
          ids.push_back(int(j));
        } else {
          scores[idx] += v;
        }
        ++idx;
      }
    }
  }
  if (requested_early_exit_) {
    LOG(INFO) << "Test interrupted.";
    return;
  }
  if (param_.test_compute_loss()) LOG(INFO) << "Test loss: " << loss / test_iter;
  std::vector<TestScore>& out = test_scores_[test_net_id];
  out.clear();
  for (size_t i = 0; i < scores.size(); ++i) {
    scores[i] /= test_iter;
    out.push_back({test_net.output_blob_names()[ids[i]], double(scores[i]),
                   double(test_net.output_loss_weights()[ids[i]])});
  }
  log_outputs(test_net, "Test", scores, ids);
}

template const std::vector<std::vector<TestScore>>& Solver<float>::test_all();
template const std::vector<std::vector<TestScore>>& Solver<double>::test_all();

}  // namespace crema
