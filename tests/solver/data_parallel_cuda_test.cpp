// Data-parallel training on GPUs through NCCL (skipped without two GPUs or without NCCL in the
// build): two replicas at batch 32 train the weights of one at batch 64, on the CPU's path; both
// end with the same bits; a replica that fails (a bad label, found on its GPU) stops the other.
#include <gtest/gtest.h>

#include "data/data_test_util.h"
#include "data_parallel_util.h"
#include "parallel/communicator.h"

namespace crema {
namespace {

using test::ReplicaResult;
using test::run_replicas;

class DataParallelCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (prim::cuda_device_count() < 2) GTEST_SKIP() << "needs two GPUs";
    if (!nccl_available()) GTEST_SKIP() << "built without NCCL";
    test::write_records(db_);
  }
  test::TempDir dir_;
  const std::string db_ = dir_.file("records");
};

TEST_F(DataParallelCuda, TwoGpusTrainTheWeightsOfOneAtTheirTotalBatch) {
  const auto cpu = run_replicas(test::records_solver(db_, 64, ""), Device::kCPU, {0});
  const auto one = run_replicas(test::records_solver(db_, 64, ""), Device::kCUDA, {0});
  for (const std::string extra : {"", "reduce_bucket_mb: 0.00001", "layer_wise_reduce: false"}) {
    SCOPED_TRACE(extra);
    const auto two = run_replicas(test::records_solver(db_, 32, extra), Device::kCUDA, {0, 1});
    EXPECT_EQ(two[0].weights, two[1].weights) << "the replicas' weights differ";
    test::expect_near_weights(two[0], one[0], 2e-5);
    test::expect_near_weights(two[0], cpu[0], 2e-5);
  }
}

TEST_F(DataParallelCuda, AFailingReplicaStopsTheOther) {
  SolverParameter p = test::records_solver(db_, 32, "");
  p.set_max_iter(100);
  // Replica 1 reads the odd records, whose labels 1 and 3 include one past 3 classes.
  p.mutable_net_param()->mutable_layer(4)->mutable_inner_product_param()->set_num_output(3);
  const std::string error = test::error_of([&] { run_replicas(p, Device::kCUDA, {0, 1}); });
  EXPECT_EQ(error.rfind("replica 1 (GPU 1): layer loss", 0), 0u) << error;
}

}  // namespace
}  // namespace crema
