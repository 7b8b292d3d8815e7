// Solver: trains a Net from a SolverParameter as Caffe's Solver/SGDSolver do. It builds the
// train net and the test nets (which share the train net's weights), loads the `weights` files
// into them, then each iteration:
//   zero the parameter diffs; run iter_size forward/backward passes (diffs accumulate, the loss
//   is their mean); log every `display` iterations; then apply the update:
//     rate  = lr_policy(iter)                           (lr_policy.h)
//     clip:  g *= clip_gradients / ||g||_2  when the global L2 norm exceeds clip_gradients
//     normalize: g /= iter_size
//     regularize: g += decay * decay_mult * w  (L2)   or   g += decay * decay_mult * sign(w)  (L1)
//     g = compute_update_value(g, local_rate = rate * lr_mult)   (the solver type's rule)
//     w -= g
// It tests every test_interval iterations, snapshots every `snapshot` iterations
// ("<prefix>_iter_N.caffemodel" + "<prefix>_iter_N.solverstate", written atomically) and can
// restore a snapshot so training continues bit-identically: with random_seed set, a resumed
// run reads the same records and draws the same crops, flips and dropout masks as the
// uninterrupted one (the state keeps each data layer's place and every generator's state), on
// the CPU and on a GPU.
//
// All arithmetic on tensors goes through primitives on device pointers, so the solver runs
// unchanged on any device the primitives support.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/net.h"
#include "core/tensor.h"
#include "crema.pb.h"
#include "parallel/gradient_reducer.h"
#include "primitives/handle.h"
#include "primitives/solver_update.h"
#include "solver/step_graph.h"

namespace crema {

// What an outside request (a signal, a UI) asks the solver to do; polled once per iteration
// (and once per test iteration). A source returns each request once.
enum class SolverAction { kNone, kStop, kSnapshot };

// One scalar output of a test net, averaged over test_iter forward passes.
struct TestScore {
  std::string name;        // the output blob's name
  double value = 0;        // its mean over the test iterations
  double loss_weight = 0;  // non-zero for loss outputs
};

template <typename Dtype>
class Solver {
 public:
  virtual ~Solver() = default;
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  // Trains from iter() to max_iter, restoring resume_file (a .solverstate) first when it is not
  // empty; snapshots after training when snapshot_after_train; tests after the last iteration
  // when it falls on test_interval. Stops early on a kStop request. When it will snapshot, the
  // snapshot folder must exist and be writable before the first iteration (else crema::Error).
  // A fresh run (no resume_file) refuses to start where snapshots of its prefix already exist,
  // unless set_overwrite_snapshots(true): another run's results are never overwritten silently.
  void solve(const std::string& resume_file = "");
  void set_overwrite_snapshots(bool overwrite) { overwrite_snapshots_ = overwrite; }
  // Runs n training iterations (fewer when stopped by a request).
  void step(int n);
  // Writes "<prefix>_iter_<iter>.caffemodel" and ".solverstate"; returns the .solverstate path.
  // Throws crema::Error naming the path when it cannot be written.
  std::string snapshot();
  // Loads a .solverstate: iteration, multistep position, update history, the data layers'
  // places and the random generators' states (where the file has them), and the weights from
  // its learned_net (opened as stored, i.e. relative to the working directory like Caffe; when
  // that file does not exist, the file of that name next to the state file). Throws
  // crema::Error when the state does not fit this solver's net.
  void restore(const std::string& state_file);
  // Runs every test net test_iter times and logs the mean scores; returns them per test net.
  const std::vector<std::vector<TestScore>>& test_all();

  // Requests are polled once per iteration; see SolverAction.
  void set_action_source(std::function<SolverAction()> source) { action_source_ = source; }
  // Data-parallel training (solver/data_parallel.h): this solver is one replica; backward sums
  // the gradients over the replicas through reducer and the update divides them by their number,
  // solve() starts from the root's weights, and every step follows the root's requests. Only the
  // root (rank 0) snapshots.
  void set_reducer(GradientReducer<Dtype>* reducer) { reducer_ = reducer; }
  // On a GPU each training step's forward and backward is replayed from a CUDA graph where the
  // net and settings allow (StepGraph; on by default; off for data-parallel training, iter_size
  // above 1 and non_finite_loss: SKIP, which decide per step on the host). The steps' losses
  // are then read where the solver reports or saves (display, test, snapshot, the end of
  // step()), and a non-finite loss or a bad label stops the run there, naming its iteration or
  // layer.
  void set_cuda_graph(bool on);
  // The replayed step, once step() has decided to use one (null otherwise).
  const StepGraph<Dtype>* step_graph() const { return step_graph_.get(); }

  int iter() const { return iter_; }
  int current_step() const { return current_step_; }
  Net<Dtype>& net() { return *net_; }
  const std::vector<std::unique_ptr<Net<Dtype>>>& test_nets() const { return test_nets_; }
  const SolverParameter& param() const { return param_; }
  // Per test net, the scores of the latest test pass (empty before the first).
  const std::vector<std::vector<TestScore>>& test_scores() const { return test_scores_; }
  // Loss of the latest training iteration (mean over iter_size) and its display smoothing.
  Dtype last_loss() const { return last_loss_; }
  Dtype smoothed_loss() const { return smoothed_loss_; }
  // Learning rate used by the latest update.
  Dtype last_rate() const { return last_rate_; }
  // Update history: history_sets() tensors per learnable parameter, set-major.
  const std::vector<std::unique_ptr<Tensor<Dtype>>>& history() const { return history_; }
  // Whether a kStop request ended the latest solve()/step().
  bool stopped_early() const { return requested_early_exit_; }

  // The solver type name ("SGD", "Adam", ...).
  virtual const char* type() const = 0;

 protected:
  // Builds the nets (see the class comment); source_name names the solver file in errors.
  // history_sets: how many history tensors each parameter needs (2 for AdaDelta and Adam).
  Solver(const SolverParameter& param, Device device, Handle& h, int history_sets,
         const std::string& source_name);

  // Names this solver's rule and sets its coefficients in d (prim/solver_update.h). d arrives
  // with the common fields set, rate being the local rate (policy rate times lr_mult).
  virtual void describe_update(prim::SolverUpdateDesc& d) const = 0;

  int num_params() const { return int(net_->learnable_params().size()); }
  Tensor<Dtype>& param_tensor(int param_id) { return *net_->learnable_params()[param_id]; }
  // History tensor `set` of a parameter.
  Tensor<Dtype>& history(int set, int param_id) {
    return *history_[size_t(set) * num_params() + param_id];
  }
  static constexpr prim::DataType dtype() { return dtype_of<Dtype>(); }

  SolverParameter param_;
  Device device_;
  Handle& h_;

 private:
  void init_train_net();
  void init_test_nets();
  void load_weights();
  void apply_update();
  void clip_gradients();
  void test(int test_net_id);
  // index: the iteration's place since the start of step().
  void update_smoothed_loss(Dtype loss, int index);
  // CUDA-graph steps (set_cuda_graph): the decision at the start of step(), then each step's
  // loss copied to the host without waiting, and read, smoothed and checked in order.
  void start_step_graph();
  void queue_loss_read();
  void settle_losses(int start_iter);
  void log_outputs(const Net<Dtype>& net, const char* kind, const std::vector<Dtype>& values,
                   const std::vector<int>& output_ids) const;
  SolverAction poll_action();
  NetParameter load_net(const std::string& path) const;
  std::string snapshot_filename(const char* extension) const;
  void check_snapshot_folder(bool fresh) const;
  // A step whose loss is NaN or infinite, as SolverParameter.non_finite_loss says: throws for
  // STOP, logs for SKIP.
  void on_non_finite_loss(Dtype loss, int iteration);
  // Loss scaling (the train net's global_grad_scale, global_grad_scale_adaptive): whether this
  // step's gradients may be applied; with adaptive scaling, a step whose gradients overflowed is
  // skipped and the scale halved, and the scale doubles after kScaleGrowthInterval good steps.
  bool accept_scaled_gradients();
  // What the parameter diffs hold over the mean gradient: loss scale times replicas (the sum of
  // the replicas' gradients); iter_size is divided separately.
  double gradient_divisor() const;
  bool is_root() const { return !reducer_ || reducer_->rank() == 0; }
  // The root's request for this step, for every replica (a replica's own request otherwise).
  SolverAction agree_on(SolverAction request);
  static constexpr int kScaleGrowthInterval = 1000;

  std::string source_name_;
  std::unique_ptr<Net<Dtype>> net_;
  std::vector<std::unique_ptr<Net<Dtype>>> test_nets_;
  std::vector<std::unique_ptr<Tensor<Dtype>>> history_;
  std::vector<std::vector<TestScore>> test_scores_;
  std::function<SolverAction()> action_source_;
  GradientReducer<Dtype>* reducer_ = nullptr;
  bool cuda_graph_ = true;
  bool graph_decided_ = false;
  std::unique_ptr<StepGraph<Dtype>> step_graph_;
  static constexpr int kPendingLosses = 256;
  std::vector<double, prim::PinnedAllocator<double>> pending_losses_;
  int pending_count_ = 0;
  int pending_first_iter_ = 0;
  int iter_ = 0;
  int current_step_ = 0;
  bool requested_early_exit_ = false;
  // Display smoothing over the last average_loss iterations (Caffe's UpdateSmoothedLoss).
  std::vector<Dtype> losses_;
  Dtype smoothed_loss_ = 0;
  Dtype last_loss_ = 0;
  bool overwrite_snapshots_ = false;
  Dtype last_rate_ = 0;
  bool adaptive_scale_ = false;
  int scaled_good_steps_ = 0;  // since the scale last changed
  // Display timing.
  std::chrono::steady_clock::time_point display_start_;
  int iterations_last_ = 0;
  int stop_iter_ = 0;
};

// Creates the solver that param.type() names: "SGD", "Nesterov", "AdaGrad", "RMSProp",
// "AdaDelta" or "Adam". Throws crema::Error for an unknown type (listing the known ones) and for
// any error of the solver or its nets. source_name (the solver file) prefixes solver errors.
template <typename Dtype>
std::unique_ptr<Solver<Dtype>> create_solver(const SolverParameter& param, Device device, Handle& h,
                                             const std::string& source_name = "");

// The known solver type names.
const std::vector<std::string>& solver_types();

}  // namespace crema
