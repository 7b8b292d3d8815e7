// A training step's forward and backward replayed from one CUDA graph (prim::StreamGraph).
// LeNet's step is about 50 kernels of a few microseconds each, so launching them one by one
// costs as much as running them; a replay costs one launch.
//
// Each step, the data layers (the leading layers without bottoms) run as usual: they wait for
// their prefetcher and copy a new batch into the same tops. The rest -- the parameter diffs
// zeroed, every other layer's forward, the loss summed on the GPU, the backward -- is recorded
// once at the second step (the first sizes every buffer and picks the algorithms) and replayed
// from then on. It is recorded again when a data top changes shape or the handle's workspace
// moves (a test net with a larger batch grew it). The solver's update runs after the replay as
// before: its learning rate changes from step to step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/net.h"
#include "primitives/handle.h"

namespace crema {

template <typename Dtype>
class StepGraph {
 public:
  // Why a training step of net cannot be replayed ("" when it can): a layer that says why not
  // (Layer::not_replayable), or a layer without bottoms after the data layers.
  static std::string unsupported(const Net<Dtype>& net);

  explicit StepGraph(Net<Dtype>& net);

  // One step: parameter diffs zeroed, forward, backward, the loss left in
  // net.loss_on_device(); nothing waits for the GPU. A layer that cannot be recorded (it waits
  // for the GPU) is logged once, and this step and every later one run eagerly.
  void run(Handle& h);
  // Whether steps are replayed (false once recording failed).
  bool active() const { return !failed_; }
  // Times the step was recorded.
  int recordings() const { return recordings_; }

 private:
  void queue_step(Handle& h);
  // Whether a data top's shape differs from what the recording saw.
  bool data_shapes_changed() const;

  Net<Dtype>& net_;
  int first_fed_ = 0;  // the first layer with bottoms; those before it are data layers
  prim::StreamGraph graph_;
  std::vector<const Tensor<Dtype>*> data_tops_;        // the data layers' tops
  std::vector<std::vector<int64_t>> recorded_shapes_;  // theirs when the step was recorded
  uint64_t recorded_workspace_ = 0;
  int steps_ = 0;
  int recordings_ = 0;
  bool failed_ = false;
};

}  // namespace crema
