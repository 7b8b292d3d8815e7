// Solver: net construction, the training loop and testing (Caffe's Solver and SGDSolver
// machinery). Snapshots are in solver_snapshot.cpp, the per-type update rules in
// sgd_solvers.cpp.
#include "solver/solver.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "core/errors.h"
#include "core/hdf5_io.h"
#include "core/replica.h"
#include "core/rng.h"
#include "core/upgrade_proto.h"
#include "primitives/blas.h"
#include "solver/lr_policy.h"

namespace crema {
namespace {

// "1h02m03s", "4m05s", "6s": an estimated duration for the progress line.
std::string format_duration(double seconds) {
  const long s = std::lround(seconds);
  char buf[64];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm%02lds", s / 3600, (s / 60) % 60, s % 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lds", s);
  }
  return buf;
}

}  // namespace

template <typename Dtype>
Solver<Dtype>::Solver(const SolverParameter& param, Device device, Handle& h, int history_sets,
                      const std::string& source_name)
    : param_(param), device_(device), h_(h), source_name_(source_name) {
  const std::string who = source_name.empty() ? "solver" : "solver " + source_name;
  CREMA_REQUIRE(h.device() == device, who, ": the handle's device differs from the solver's");
  CREMA_REQUIRE(param_.snapshot_format() == SolverParameter::BINARYPROTO || hdf5::hdf5_available(),
                who, ": snapshot_format HDF5: crema was built without HDF5");
  CREMA_REQUIRE(param_.average_loss() >= 1, who, ": average_loss must be >= 1, got ",
                param_.average_loss());
  CREMA_REQUIRE(param_.iter_size() >= 1, who, ": iter_size must be >= 1, got ", param_.iter_size());
  // Settings that can only be mistakes (each would train to the end on NaNs or never stop).
  for (const auto& [field, value] : {std::pair<const char*, int>{"max_iter", param_.max_iter()},
                                     {"snapshot", param_.snapshot()},
                                     {"display", param_.display()},
                                     {"test_interval", param_.test_interval()}})
    CREMA_REQUIRE(value >= 0, who, ": ", field, " must be >= 0, got ", value);
  for (const auto& [field, value] : {std::pair<const char*, float>{"momentum", param_.momentum()},
                                     {"momentum2", param_.momentum2()}})
    CREMA_REQUIRE(value >= 0 && value < 1, who, ": ", field, " must be in [0, 1), got ", value);
  CREMA_REQUIRE(std::isfinite(param_.weight_decay()) && param_.weight_decay() >= 0, who,
                ": weight_decay must be finite and >= 0, got ", param_.weight_decay());
  CREMA_REQUIRE(std::isfinite(param_.delta()) && param_.delta() >= 0, who,
                ": delta must be finite and >= 0, got ", param_.delta());
  CREMA_REQUIRE(param_.regularization_type() == "L2" || param_.regularization_type() == "L1", who,
                ": unknown regularization_type \"", param_.regularization_type(),
                "\"; known types: L2, L1");
  try {
    check_lr_policy(param_);
  } catch (const Error& e) {
    fail(who, ": ", e.what());
  }
  // No snapshot_prefix: the solver file's path without its extension, so that runs of different
  // solvers never write the same "_iter_N" files into the working folder.
  if (!param_.has_snapshot_prefix() && !source_name.empty()) {
    param_.set_snapshot_prefix(std::filesystem::path(source_name).replace_extension().string());
    LOG(INFO) << who << " sets no snapshot_prefix; snapshots go to " << param_.snapshot_prefix()
              << "_iter_N.*";
  }
  // Seed before the nets are built, so fillers and data shuffling are reproducible. Replicas of
  // data-parallel training each add their rank, as Caffe does: their dropout masks and crops
  // differ, and the root's initial weights are copied to all.
  if (param_.random_seed() >= 0) {
    const int64_t seed = param_.random_seed() + this_replica().rank;
    seed_thread_rng(seed);
    h_.set_seed(uint64_t(seed));
  }
  init_train_net();
  init_test_nets();
  load_weights();
  test_scores_.resize(test_nets_.size());
  LOG(INFO) << "Solver scaffolding done.";
  // History (momentum, squared-gradient averages) starts at zero.
  for (int set = 0; set < history_sets; ++set) {
    for (const Tensor<Dtype>* p : net_->learnable_params()) {
      history_.push_back(std::make_unique<Tensor<Dtype>>(p->shape(), device_));
      history_.back()->fill_data(Dtype(0));
    }
  }
}

template <typename Dtype>
NetParameter Solver<Dtype>::load_net(const std::string& path) const {
  // Relative paths are relative to the working directory, as in Caffe.
  return load_net_param_text(path);
}

template <typename Dtype>
void Solver<Dtype>::init_train_net() {
  const std::string who = source_name_.empty() ? "solver" : "solver " + source_name_;
  const int sources = int(param_.has_net()) + int(param_.has_net_param()) +
                      int(param_.has_train_net()) + int(param_.has_train_net_param());
  CREMA_REQUIRE(sources >= 1, who,
                " names no network (net, net_param, train_net or train_net_param)");
  CREMA_REQUIRE(sources == 1, who,
                " names more than one train network (give one of net, net_param, train_net, "
                "train_net_param)");
  NetParameter net_param;
  if (param_.has_train_net_param()) net_param = param_.train_net_param();
  if (param_.has_train_net()) net_param = load_net(param_.train_net());
  if (param_.has_net_param()) net_param = param_.net_param();
  if (param_.has_net()) net_param = load_net(param_.net());
  // NetState precedence, lowest first: phase TRAIN, the net's own state, the solver's
  // train_state.
  NetState state;
  state.set_phase(TRAIN);
  state.MergeFrom(net_param.state());
  state.MergeFrom(param_.train_state());
  *net_param.mutable_state() = state;
  LOG(INFO) << "Creating training net";
  net_ = std::make_unique<Net<Dtype>>(net_param, device_);
  net_->share_activation_memory();
  // NVIDIA Caffe's loss scaling fields. Adaptive scaling starts at the given scale, or at 2^16
  // when none is given (PyTorch's GradScaler starts there too).
  adaptive_scale_ = net_param.global_grad_scale_adaptive();
  double scale = net_param.global_grad_scale();
  if (adaptive_scale_ && !net_param.has_global_grad_scale()) scale = 65536;
  CREMA_REQUIRE(scale > 0 && std::isfinite(scale), who,
                ": global_grad_scale must be positive, got ", scale);
  if (scale != 1) {
    LOG(INFO) << "Loss scale " << scale << (adaptive_scale_ ? " (adaptive)" : "");
    net_->set_loss_scale(h_, scale);
  }
}

template <typename Dtype>
bool Solver<Dtype>::accept_scaled_gradients() {
  if (!adaptive_scale_) return true;
  double sum = 0;  // non-finite if any gradient is
  for (Tensor<Dtype>* p : net_->learnable_params())
    sum += prim::asum(h_, dtype(), p->count(), p->diff());
  const double scale = net_->loss_scale();
  if (std::isfinite(sum)) {
    if (++scaled_good_steps_ >= kScaleGrowthInterval && scale < 0x1p24) {
      net_->set_loss_scale(h_, scale * 2);
      scaled_good_steps_ = 0;
    }
    return true;
  }
  CREMA_REQUIRE(scale > 1, "Iteration ", iter_, ": gradients are not finite even at loss scale ",
                scale, ": the training diverged");
  LOG(WARNING) << "Iteration " << iter_ << ": gradients overflowed at loss scale " << scale
               << "; update skipped, loss scale now " << scale / 2;
  net_->set_loss_scale(h_, scale / 2);
  scaled_good_steps_ = 0;
  return false;
}

template <typename Dtype>
void Solver<Dtype>::init_test_nets() {
  const std::string who = source_name_.empty() ? "solver" : "solver " + source_name_;
  const bool generic = param_.has_net() || param_.has_net_param();
  const int explicit_nets = param_.test_net_param_size() + param_.test_net_size();
  // A generic net (net / net_param) makes one test net per test_iter beyond the explicit ones.
  if (generic) {
    CREMA_REQUIRE(param_.test_iter_size() >= explicit_nets, who, " has ", explicit_nets,
                  " test nets but ", param_.test_iter_size(),
                  " test_iter values (give one per test net)");
  } else {
    CREMA_REQUIRE(param_.test_iter_size() == explicit_nets, who, " has ", explicit_nets,
                  " test nets but ", param_.test_iter_size(),
                  " test_iter values (give one per test net)");
  }
  const int num_nets = generic ? param_.test_iter_size() : explicit_nets;
  CREMA_REQUIRE(param_.test_state_size() == 0 || param_.test_state_size() == num_nets, who, " has ",
                num_nets, " test nets but ", param_.test_state_size(),
                " test_state values (give none or one per test net)");
  for (int i = 0; i < param_.test_iter_size(); ++i)
    CREMA_REQUIRE(param_.test_iter(i) >= 0, who, ": test_iter ", i, " is negative");
  CREMA_REQUIRE(num_nets == 0 || param_.test_interval() > 0, who, " has ", num_nets,
                " test nets but test_interval is ", param_.test_interval(), " (give > 0)");
  std::vector<NetParameter> params;
  std::vector<std::string> sources;
  for (const NetParameter& p : param_.test_net_param()) {
    params.push_back(p);
    sources.push_back("test_net_param");
  }
  for (const std::string& path : param_.test_net()) {
    params.push_back(load_net(path));
    sources.push_back("test_net file: " + path);
  }
  while (int(params.size()) < num_nets) {
    if (param_.has_net_param()) {
      params.push_back(param_.net_param());
      sources.push_back("net_param");
    } else {
      params.push_back(load_net(param_.net()));
      sources.push_back("net file: " + param_.net());
    }
  }
  for (int i = 0; i < num_nets; ++i) {
    NetState state;
    state.set_phase(TEST);
    state.MergeFrom(params[i].state());
    if (param_.test_state_size()) state.MergeFrom(param_.test_state(i));
    *params[i].mutable_state() = state;
    LOG(INFO) << "Creating test net (#" << i << ") specified by " << sources[i];
    test_nets_.push_back(std::make_unique<Net<Dtype>>(params[i], device_));
    test_nets_.back()->share_trained_layers_with(*net_);
    test_nets_.back()->share_inference_memory();
  }
}

template <typename Dtype>
void Solver<Dtype>::load_weights() {
  // SolverParameter.weights: .caffemodel files (each entry may list several, comma-separated)
  // copied by layer name into the train net and every test net, later files winning.
  for (const std::string& entry : param_.weights()) {
    std::stringstream list(entry);
    std::string file;
    while (std::getline(list, file, ',')) {
      if (file.empty()) continue;
      LOG(INFO) << "Loading weights from " << file;
      try {
        const NetParameter trained = load_net_param_binary(file);
        require_weights_copied(net_->copy_trained_layers_from(trained), file);
        for (auto& t : test_nets_) t->copy_trained_layers_from(trained);
      } catch (const Error& e) {
        fail(source_name_.empty() ? "solver" : "solver " + source_name_, ": weights ", file, ": ",
             e.what());
      }
    }
  }
}

template <typename Dtype>
SolverAction Solver<Dtype>::poll_action() {
  return action_source_ ? action_source_() : SolverAction::kNone;
}

template <typename Dtype>
void Solver<Dtype>::solve(const std::string& resume_file) {
  LOG(INFO) << "Solving " << net_->name();
  LOG(INFO) << "Learning Rate Policy: " << param_.lr_policy();
  requested_early_exit_ = false;
  if (!resume_file.empty()) {
    LOG(INFO) << "Restoring previous solver status from " << resume_file;
    restore(resume_file);
  }
  if (reducer_) reducer_->broadcast_params(*net_);
  const int start_iter = iter_;
  if (param_.snapshot() > 0 || param_.snapshot_after_train())
    check_snapshot_folder(resume_file.empty());
  step(param_.max_iter() - iter_);
  // The final snapshot, unless the last iteration already wrote one.
  if (param_.snapshot_after_train() && (!param_.snapshot() || iter_ % param_.snapshot() != 0) &&
      is_root())
    snapshot();
  if (requested_early_exit_) {
    LOG(INFO) << "Optimization stopped early.";
    return;
  }
  // One more forward pass of the train net (no update) to display the loss of the final
  // weights, and a final test, when the last iteration falls on display / test_interval.
  if (param_.display() && iter_ % param_.display() == 0) {
    const Dtype loss = net_->forward(h_);
    update_smoothed_loss(loss, iter_ - start_iter);
    LOG(INFO) << "Iteration " << iter_ << ", loss = " << smoothed_loss_;
  }
  if (param_.test_interval() && iter_ % param_.test_interval() == 0) test_all();
  LOG(INFO) << "Optimization Done.";
}

namespace {

// The first layer (in forward order) one of whose outputs holds a NaN or an infinity, or "".
// Reads every output to the host: only for a step that already diverged.
template <typename Dtype>
std::string first_non_finite_layer(const Net<Dtype>& net) {
  for (size_t i = 0; i < net.layer_names().size(); ++i)
    for (const Tensor<Dtype>* top : net.top_vecs()[i])
      for (Dtype v : top->data_vector())
        if (!std::isfinite(double(v))) return net.layer_names()[i];
  return "";
}

}  // namespace

template <typename Dtype>
void Solver<Dtype>::on_non_finite_loss(Dtype loss, int iteration) {
  if (param_.non_finite_loss() == SolverParameter::CONTINUE) return;  // Caffe's way
  const std::string layer = first_non_finite_layer(*net_);
  const std::string where =
      layer.empty() ? "" : " (the first layer whose output is not finite: " + layer + ")";
  if (param_.non_finite_loss() == SolverParameter::STOP)
    fail("Iteration ", iteration, ": the loss is ", loss, where,
         "; the training diverged and stops (solver field non_finite_loss: SKIP or CONTINUE "
         "goes on)");
  LOG(WARNING) << "Iteration " << iteration << ": the loss is " << loss << where
               << "; the step's update is skipped";
}

template <typename Dtype>
void Solver<Dtype>::step(int n) {
  const int start_iter = iter_;
  stop_iter_ = iter_ + std::max(n, 0);
  requested_early_exit_ = false;
  losses_.clear();
  smoothed_loss_ = 0;
  display_start_ = std::chrono::steady_clock::now();
  iterations_last_ = iter_;
  start_step_graph();
  while (iter_ < stop_iter_) {
    if (param_.test_interval() && iter_ % param_.test_interval() == 0 &&
        (iter_ > 0 || param_.test_initialization())) {
      settle_losses(start_iter);
      test_all();
      // Replicas stop together, at the end of a step (agree_on).
      if (requested_early_exit_ && !reducer_) break;
    }
    const bool display = param_.display() && iter_ % param_.display() == 0;
    Dtype loss = 0;
    if (step_graph_) {
      step_graph_->run(h_);
      queue_loss_read();
      if (display || pending_count_ == kPendingLosses) settle_losses(start_iter);
    } else {
      // Backward accumulates into the parameter diffs, so they start each iteration at zero;
      // gradients accumulate over iter_size passes and the reported loss is their mean.
      net_->clear_param_diffs(h_);
      for (int i = 0; i < param_.iter_size(); ++i) {
        loss += net_->forward(h_);
        if (reducer_ && i + 1 == param_.iter_size())
          reducer_->backward(*net_);
        else
          net_->backward(h_);
      }
      loss /= param_.iter_size();
      last_loss_ = loss;
      update_smoothed_loss(loss, iter_ - start_iter);
    }
    if (display) {
      const auto now = std::chrono::steady_clock::now();
      const float lapse = std::chrono::duration<float>(now - display_start_).count();
      const float per_s = float(iter_ - iterations_last_) / (lapse > 0 ? lapse : 1.0f);
      LOG(INFO) << "Iteration " << iter_ << " (" << per_s << " iter/s, " << lapse << "s/"
                << param_.display() << " iters), loss = " << smoothed_loss_;
      std::vector<Dtype> values;
      std::vector<int> ids;
      for (size_t j = 0; j < net_->output_blobs().size(); ++j) {
        for (Dtype v : net_->output_blobs()[j]->data_vector()) {
          values.push_back(v);
          ids.push_back(int(j));
        }
      }
      log_outputs(*net_, "Train", values, ids);
      if (iter_ > iterations_last_ && per_s > 0) {
        const int total = stop_iter_;
        LOG(INFO) << "Progress: " << iter_ << "/" << total << " iterations ("
                  << int(100.0 * iter_ / std::max(total, 1)) << "%), " << per_s << " iter/s, about "
                  << format_duration((total - iter_) / per_s) << " remaining";
      }
      display_start_ = now;
      iterations_last_ = iter_;
    }
    // A replayed step's loss is checked when it is settled.
    bool finite = step_graph_ || std::isfinite(double(loss));
    // A replica whose loss is not finite makes every replica's summed gradients so.
    if (reducer_) finite = !reducer_->communicator().agree_max(!finite);
    if (!finite) on_non_finite_loss(loss, iter_);
    if ((finite || param_.non_finite_loss() == SolverParameter::CONTINUE) &&
        accept_scaled_gradients())
      apply_update();
    // iter_ counts the steps taken so far (a step skipped by loss scaling counts).
    ++iter_;
    const SolverAction request = agree_on(poll_action());
    const bool save = ((param_.snapshot() && iter_ % param_.snapshot() == 0) ||
                       request == SolverAction::kSnapshot) &&
                      is_root();
    if (save || request == SolverAction::kStop) settle_losses(start_iter);
    if (save) snapshot();
    if (request == SolverAction::kStop) {
      requested_early_exit_ = true;
      break;
    }
  }
  settle_losses(start_iter);
}

template <typename Dtype>
void Solver<Dtype>::set_cuda_graph(bool on) {
  cuda_graph_ = on;
  graph_decided_ = false;
  if (!on) step_graph_.reset();
}

template <typename Dtype>
void Solver<Dtype>::start_step_graph() {
  if (graph_decided_ || !cuda_graph_ || device_ != Device::kCUDA) return;
  graph_decided_ = true;
  const std::string why = reducer_                 ? "data-parallel training"
                          : param_.iter_size() > 1 ? "iter_size above 1"
                          : param_.non_finite_loss() == SolverParameter::SKIP
                              ? "non_finite_loss: SKIP decides each step's update on the host"
                              : StepGraph<Dtype>::unsupported(*net_);
  if (!why.empty()) {
    LOG(INFO) << "CUDA graph off: " << why;
    return;
  }
  step_graph_ = std::make_unique<StepGraph<Dtype>>(*net_);
  pending_losses_.resize(kPendingLosses);
}

template <typename Dtype>
void Solver<Dtype>::queue_loss_read() {
  if (pending_count_ == 0) pending_first_iter_ = iter_;
  prim::memcpy_async(h_, &pending_losses_[size_t(pending_count_++)], Device::kCPU,
                     net_->loss_on_device(), device_, sizeof(double));
}

template <typename Dtype>
void Solver<Dtype>::settle_losses(int start_iter) {
  if (pending_count_ == 0) return;
  const int count = pending_count_;
  pending_count_ = 0;
  net_->wait(h_);
  for (int k = 0; k < count; ++k) {
    const int iteration = pending_first_iter_ + k;
    const Dtype loss = Dtype(pending_losses_[size_t(k)]);
    last_loss_ = loss;
    update_smoothed_loss(loss, iteration - start_iter);
    if (!std::isfinite(double(loss))) on_non_finite_loss(loss, iteration);
  }
}

template <typename Dtype>
SolverAction Solver<Dtype>::agree_on(SolverAction request) {
  if (!reducer_) return request;
  // A stop asked for during the root's test ends the step for all.
  if (requested_early_exit_) request = SolverAction::kStop;
  static_assert(int(SolverAction::kNone) == 0);
  return SolverAction(reducer_->communicator().agree_max(is_root() ? int(request) : 0));
}

template <typename Dtype>
double Solver<Dtype>::gradient_divisor() const {
  return net_->loss_scale() * (reducer_ ? reducer_->replicas() : 1);
}

template <typename Dtype>
void Solver<Dtype>::update_smoothed_loss(Dtype loss, int index) {
  // Running mean over the last average_loss iterations, kept in a ring buffer.
  const int average_loss = param_.average_loss();
  if (int(losses_.size()) < average_loss) {
    losses_.push_back(loss);
    const int size = int(losses_.size());
    smoothed_loss_ = (smoothed_loss_ * (size - 1) + loss) / size;
  } else {
    const int idx = index % average_loss;
    smoothed_loss_ += (loss - losses_[idx]) / average_loss;
    losses_[idx] = loss;
  }
}

template <typename Dtype>
void Solver<Dtype>::log_outputs(const Net<Dtype>& net, const char* kind,
                                const std::vector<Dtype>& values,
                                const std::vector<int>& output_ids) const {
  for (size_t i = 0; i < values.size(); ++i) {
    const int j = output_ids[i];
    const Dtype weight = net.output_loss_weights()[j];
    std::ostringstream loss_msg;
    if (weight != 0) loss_msg << " (* " << weight << " = " << weight * values[i] << " loss)";
    LOG(INFO) << "    " << kind << " net output #" << i << ": " << net.output_blob_names()[j]
              << " = " << values[i] << loss_msg.str();
  }
}

template <typename Dtype>
void Solver<Dtype>::apply_update() {
  const int previous_step = current_step_;
  const Dtype rate = Dtype(learning_rate(param_, iter_, &current_step_));
  CREMA_REQUIRE(std::isfinite(double(rate)), "Iteration ", iter_, ": lr_policy \"",
                param_.lr_policy(), "\" gives a learning rate of ", rate, " (base_lr ",
                param_.base_lr(), ", gamma ", param_.gamma(), ", power ", param_.power(), ")");
  last_rate_ = rate;
  if (param_.lr_policy() == "multistep" && current_step_ != previous_step)
    LOG(INFO) << "MultiStep Status: Iteration " << iter_ << ", step = " << current_step_;
  if (param_.display() && iter_ % param_.display() == 0)
    LOG(INFO) << "Iteration " << iter_ << ", lr = " << rate;
  clip_gradients();
  // One fused pass per parameter (mean over iter_size passes, the diffs holding their sum;
  // weight decay; the rule's step; w -= step), all parameters in one list.
  const prim::Regularization decay_kind =
      param_.regularization_type() == "L2" ? prim::Regularization::kL2 : prim::Regularization::kL1;
  std::vector<prim::SolverUpdateParam> update(num_params());
  for (int id = 0; id < num_params(); ++id) {
    prim::SolverUpdateParam& u = update[id];
    prim::SolverUpdateDesc& d = u.desc;
    Tensor<Dtype>& p = param_tensor(id);
    d.dtype = dtype();
    // The diffs hold the sum over iter_size passes (and over the replicas) of loss-scaled
    // gradients.
    d.grad_scale = double(Dtype(1) / (Dtype(param_.iter_size()) * Dtype(gradient_divisor())));
    d.count = p.count();
    d.rate = double(rate * net_->params_lr()[id]);
    d.decay = double(Dtype(param_.weight_decay()) * net_->params_weight_decay()[id]);
    // A finite rate (checked with the policy) times a huge lr_mult, or weight_decay times
    // decay_mult, can still overflow: the spec that did it is the layer's.
    if (!std::isfinite(d.rate))
      fail("Iteration ", iter_, ": ", net_->learnable_param_label(id), ": the learning rate ", rate,
           " times lr_mult ", net_->params_lr()[id], " overflows");
    if (!std::isfinite(d.decay))
      fail("Iteration ", iter_, ": ", net_->learnable_param_label(id), ": weight_decay ",
           param_.weight_decay(), " times decay_mult ", net_->params_weight_decay()[id],
           " overflows");
    d.regularization = d.decay == 0 ? prim::Regularization::kNone : decay_kind;
    describe_update(d);
    u.w = p.mutable_data();
    u.g = p.mutable_diff();
    u.hist = history(0, id).mutable_data();
    u.hist2 = prim::solver_update_history(d.rule) == 2 ? history(1, id).mutable_data() : nullptr;
  }
  try {
    prim::solver_update(h_, update.data(), update.size());
  } catch (const prim::PrimError& e) {
    fail("Iteration ", iter_, ": ", e.what());
  }
}

template <typename Dtype>
void Solver<Dtype>::clip_gradients() {
  // Rescale every gradient by the same factor so the global L2 norm is at most clip_gradients:
  // the direction is kept, only the step length is bounded.
  const Dtype clip = param_.clip_gradients();
  if (clip < 0) return;
  double sumsq = 0;
  for (int id = 0; id < num_params(); ++id) {
    const Tensor<Dtype>& p = param_tensor(id);
    sumsq += prim::dot(h_, dtype(), p.count(), p.diff(), p.diff());
  }
  const Dtype norm = Dtype(std::sqrt(sumsq) / gradient_divisor());
  if (norm > clip) {
    const Dtype scale = clip / norm;
    LOG(INFO) << "Gradient clipping: scaling down gradients (L2 norm " << norm << " > " << clip
              << ") by scale factor " << scale;
    for (int id = 0; id < num_params(); ++id) {
      Tensor<Dtype>& p = param_tensor(id);
      prim::scal(h_, dtype(), p.count(), double(scale), p.mutable_diff());
    }
  }
}

template class Solver<float>;
template class Solver<double>;

}  // namespace crema
