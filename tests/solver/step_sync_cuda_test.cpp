// A training step never blocks the whole device: ResNet-50 (BatchNorm, Scale, in-place ReLU,
// Eltwise, the layers that used to copy through the device-wide blocking copy) and CaffeNet take
// solver steps on the GPU while the count of device-wide synchronizations stays where it was.
// The loss read the solver does each step waits for its own stream only.
#include <gtest/gtest.h>

#include <string>

#include "core/upgrade_proto.h"
#include "cuda_test_util.h"
#include "solver/solver.h"

namespace crema {
namespace {

// The bench model at batch 2, so the test is quick.
NetParameter small_batch(const std::string& model) {
  NetParameter net = load_net_param_text(std::string(CREMA_SOURCE_DIR) + "/bench/models/" + model);
  for (LayerParameter& l : *net.mutable_layer()) {
    if (l.has_input_param()) l.mutable_input_param()->mutable_shape(0)->set_dim(0, 2);
    if (l.has_dummy_data_param()) l.mutable_dummy_data_param()->mutable_shape(0)->set_dim(0, 2);
  }
  return net;
}

void expect_no_device_sync(const std::string& model) {
  SCOPED_TRACE(model);
  SolverParameter sp;
  *sp.mutable_net_param() = small_batch(model);
  sp.set_base_lr(0.001f);
  sp.set_momentum(0.9f);
  sp.set_lr_policy("fixed");
  sp.set_max_iter(100);
  sp.set_snapshot_after_train(false);
  prim::Handle h(Device::kCUDA);
  auto solver = create_solver<float>(sp, Device::kCUDA, h, "step_sync_cuda_test");
  solver->net().fill_inputs_uniform(3);
  solver->step(1);  // setup-time copies (filler uploads, arena zeroing) are done by now
  h.synchronize();
  const uint64_t before = prim::cuda_device_sync_count();
  solver->step(2);
  h.synchronize();
  EXPECT_EQ(prim::cuda_device_sync_count(), before);
}

TEST(StepSyncCuda, TrainingStepsNeverSynchronizeTheDevice) {
  CREMA_SKIP_WITHOUT_GPU();
  expect_no_device_sync("resnet50_train_b128.prototxt");
  expect_no_device_sync("caffenet_train_b256.prototxt");
}

}  // namespace
}  // namespace crema
