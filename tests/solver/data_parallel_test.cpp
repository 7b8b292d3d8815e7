// Data-parallel training on CPU replicas (threads of one process): n replicas at batch b train
// the same weights as one at batch n*b, every replica ends with the same bits, only the root
// tests, the root's requests stop every replica at the same step, a failing replica stops the
// others, and the gradient buckets follow the order in which backward finishes them.
#include "solver/data_parallel.h"

#include <gtest/gtest.h>

#include <thread>

#include "data/data_test_util.h"
#include "data_parallel_util.h"
#include "parallel/gradient_reducer.h"

namespace crema {
namespace {

using test::ReplicaResult;
using test::run_replicas;

class DataParallel : public ::testing::Test {
 protected:
  void SetUp() override { test::write_records(db_); }
  test::TempDir dir_;
  const std::string db_ = dir_.file("records");
};

TEST_F(DataParallel, ReplicasTrainTheWeightsOfOneRunAtTheirTotalBatch) {
  const std::vector<ReplicaResult> one =
      run_replicas(test::records_solver(db_, 64, ""), Device::kCPU, {0});
  // With clipping on, the clipped norm is that of the mean gradient, as in one run.
  const std::vector<ReplicaResult> one_clipped =
      run_replicas(test::records_solver(db_, 64, "clip_gradients: 0.02"), Device::kCPU, {0});
  for (const auto& [replicas, batch, extra] : {std::tuple<int, int, std::string>{2, 32, ""},
                                               {4, 16, ""},
                                               {2, 16, "iter_size: 2"},
                                               {2, 32, "clip_gradients: 0.02"}}) {
    SCOPED_TRACE(testing::Message() << replicas << " replicas at batch " << batch << " " << extra);
    const std::vector<ReplicaResult> many = run_replicas(
        test::records_solver(db_, batch, extra), Device::kCPU, std::vector<int>(size_t(replicas)));
    ASSERT_EQ(many.size(), size_t(replicas));
    for (const ReplicaResult& r : many) {
      EXPECT_EQ(r.weights, many[0].weights) << "the replicas' weights differ";
      EXPECT_EQ(r.iter, 6);
    }
    test::expect_near_weights(many[0], extra.find("clip") == 0 ? one_clipped[0] : one[0], 2e-6);
  }
  EXPECT_NE(one[0].weights, one_clipped[0].weights) << "clipping did nothing: the test is blind";
}

TEST_F(DataParallel, BucketsDuringBackwardSumWhatOneSumAfterItDoes) {
  const auto after =
      run_replicas(test::records_solver(db_, 32, "layer_wise_reduce: false"), Device::kCPU, {0, 0});
  const auto during = run_replicas(test::records_solver(db_, 32, "reduce_bucket_mb: 0.00001"),
                                   Device::kCPU, {0, 0});
  EXPECT_EQ(after[0].weights, during[0].weights);
}

TEST_F(DataParallel, OnlyTheRootTests) {
  const auto r = run_replicas(test::records_solver(db_, 32, "test_iter: 2 test_interval: 3"),
                              Device::kCPU, {0, 0});
  EXPECT_EQ(r[0].test_nets, 1u);
  EXPECT_EQ(r[0].test_scores, 2u);  // loss and accuracy
  EXPECT_EQ(r[1].test_nets, 0u);
}

TEST_F(DataParallel, TheRootsStopStopsEveryReplicaAtOneStep) {
  int polls = 0;
  const auto r =
      run_replicas(test::records_solver(db_, 32, ""), Device::kCPU, {0, 0, 0},
                   [&polls]() { return ++polls == 3 ? SolverAction::kStop : SolverAction::kNone; });
  for (const ReplicaResult& x : r) {
    EXPECT_EQ(x.iter, 3);
    EXPECT_TRUE(x.stopped);
  }
}

TEST_F(DataParallel, AFailingReplicaStopsTheOthers) {
  DataParallelRun run;
  run.param = test::records_solver(db_, 32, "");
  run.param.set_max_iter(100);
  run.device_ids = {0, 0, 0};
  run.prepare = [](Solver<float>&) {
    if (this_replica().rank == 2) fail("cannot prepare");
  };
  EXPECT_EQ(test::error_of([&] { train_data_parallel(run); }), "replica 2: cannot prepare");
  // A replica failing in its first step likewise: of two replicas, the first reads the even
  // records (labels 0 and 2), the second the odd ones (1 and 3, out of range for 3 classes).
  run.param.mutable_net_param()->mutable_layer(4)->mutable_inner_product_param()->set_num_output(3);
  run.device_ids = {0, 0};
  run.prepare = {};
  const std::string error = test::error_of([&] { train_data_parallel(run); });
  EXPECT_EQ(error.rfind("replica 1: layer loss", 0), 0u) << error;
  EXPECT_NE(error.find("label"), std::string::npos) << error;
}

// Replicas that end with different weights are an error; BatchNorm's statistics, gathered by each
// replica from its own batches (lr_mult 0), may differ.
TEST_F(DataParallel, ReplicasMustEndWithTheSameWeights) {
  DataParallelRun run;
  run.param = test::records_solver(db_, 32, "");
  run.device_ids = {0, 0};
  Solver<float>* root = nullptr;
  run.prepare = [&root](Solver<float>& s) {
    if (this_replica().rank == 0) root = &s;
  };
  int polls = 0;
  run.actions = [&]() {
    if (++polls == 3) {  // a fault: the root's first weight moves alone
      Tensor<float>& w = *root->net().learnable_params()[0];
      std::vector<float> v = w.data_vector();
      v[0] += 1;
      w.set_data(v);
    }
    return SolverAction::kNone;
  };
  const std::string error = test::error_of([&] { train_data_parallel(run); });
  EXPECT_NE(error.find("the replicas' weights differ after training"), std::string::npos) << error;

  SolverParameter bn = test::records_solver(db_, 32, "");
  LayerParameter* norm = bn.mutable_net_param()->add_layer();
  norm->set_name("bn");
  norm->set_type("BatchNorm");
  norm->add_bottom("ip1");
  norm->add_top("ip1");
  for (int i = bn.net_param().layer_size() - 1; i > 3; --i)  // right after ip1
    bn.mutable_net_param()->mutable_layer()->SwapElements(i, i - 1);
  const auto r = run_replicas(bn, Device::kCPU, {0, 0});
  ASSERT_EQ(r[0].weights.size(), 7u);  // ip1 (2), bn (3), ip2 (2)
  EXPECT_NE(r[0].weights[2], r[1].weights[2])
      << "the replicas' batch means agree: the test is blind";
  for (size_t p : {0, 1, 5, 6}) EXPECT_EQ(r[0].weights[p], r[1].weights[p]);
}

TEST_F(DataParallel, BadSettingsAreErrors) {
  DataParallelRun run;
  run.param = test::records_solver(db_, 32, "reduce_bucket_mb: 0");
  run.device_ids = {0, 0};
  EXPECT_NE(
      test::error_of([&] { train_data_parallel(run); }).find("reduce_bucket_mb must be positive"),
      std::string::npos);
  run.device_ids.clear();
  EXPECT_NE(test::error_of([&] { train_data_parallel(run); }).find("at least one device"),
            std::string::npos);
}

// Buckets are filled in the order backward finishes the gradients: the last layer's first.
TEST_F(DataParallel, BucketsFollowTheBackward) {
  SolverParameter p = test::records_solver(db_, 8, "");
  p.mutable_net_param()->mutable_state()->set_phase(TRAIN);
  Net<float> net(p.net_param(), Device::kCPU);
  Handle h;
  auto comms = make_thread_communicators(1);
  GradientReducer<float> small(*comms[0], h, 1, true);
  net.forward(h);
  small.backward(net);
  EXPECT_EQ(small.buckets(), (std::vector<std::vector<int>>{{2}, {3}, {0}, {1}}));
  GradientReducer<float> large(*comms[0], h, size_t(1) << 20, true);
  large.backward(net);
  EXPECT_EQ(large.buckets(), (std::vector<std::vector<int>>{{2, 3, 0, 1}}));
}

}  // namespace
}  // namespace crema
