// crema train under mpirun on the CPU: one replica per process, summing over MPI, trains the
// weights the same replicas train as threads of one process; a failing process ends the run with
// its error. Skipped where crema was built without MPI or mpirun is missing.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/proto_io.h"
#include "core/upgrade_proto.h"
#include "data/data_test_util.h"
#include "run_command.h"
#include "solver/data_parallel_util.h"

namespace crema {
namespace {

// mpirun -np 2 crema train --solver=solver, as root too (CI), without the shared-memory copy
// mechanism containers forbid.
test::CommandResult mpi_train(const std::string& solver) {
  return test::run_command(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
      "OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun -np 2 --oversubscribe " +
      std::string(CREMA_BINARY_DIR) + "/crema train --solver=" + solver);
}

class MpiTrain : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef CREMA_WITH_MPI
    GTEST_SKIP() << "built without MPI";
#endif
    if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun";
    test::write_records(db_);
  }
  // The records solver at batch 32 per replica, snapshotting at the end into the scratch folder.
  SolverParameter solver() const {
    SolverParameter p = test::records_solver(db_, 32, "");
    p.set_snapshot_after_train(true);
    p.set_snapshot_prefix(dir_.file("mpi"));
    return p;
  }
  std::string write(const SolverParameter& p) const {
    const std::string path = dir_.file("solver.prototxt");
    write_text_proto_atomic(p, path);
    return path;
  }
  test::TempDir dir_;
  const std::string db_ = dir_.file("records");
};

TEST_F(MpiTrain, ProcessesTrainWhatThreadsTrain) {
  const SolverParameter p = solver();
  const test::CommandResult r = mpi_train(write(p));
  ASSERT_EQ(r.status, 0) << r.output;
  const NetParameter trained = load_net_param_binary(dir_.file("mpi_iter_6.caffemodel"));
  std::vector<std::vector<float>> weights;
  for (const LayerParameter& l : trained.layer())
    for (const BlobProto& b : l.blobs()) weights.emplace_back(b.data().begin(), b.data().end());
  test::ReplicaResult processes;
  processes.weights = weights;
  SolverParameter in_process = p;
  in_process.set_snapshot_after_train(false);
  const auto threads = test::run_replicas(in_process, Device::kCPU, {0, 0});
  test::expect_near_weights(processes, threads[0], 1e-6);
}

TEST_F(MpiTrain, AFailingProcessEndsTheRun) {
  SolverParameter p = solver();
  p.set_max_iter(100);
  // The second process reads the odd records, whose labels 1 and 3 include one past 3 classes.
  p.mutable_net_param()->mutable_layer(4)->mutable_inner_product_param()->set_num_output(3);
  const test::CommandResult r = mpi_train(write(p));
  EXPECT_NE(r.status, 0) << r.output;
  // The error names the replica, then the loss layer's line in the solver file.
  EXPECT_NE(r.output.find("crema: error: replica 1: " + dir_.file("solver.prototxt") + ":"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(": layer loss (SoftmaxWithLoss): softmax_loss_fwd: label 3"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace crema
