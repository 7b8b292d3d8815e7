// A seeded run that draws from every source of randomness a step has -- LMDB records read in
// order across wrap-arounds, random crops and flips, dropout masks, a test net reading records
// of its own -- trained straight for 20 iterations, and again from its snapshot at iteration 10.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/proto_io.h"
#include "data/data_test_util.h"
#include "data_parallel_util.h"
#include "solver/solver.h"

namespace crema::test {

// records_solver (data_parallel_util.h) with random crops and flips in the training data, a
// Dropout after the ReLU, a test net and a snapshot at iteration 10.
inline SolverParameter resume_solver(const std::string& db, const std::string& prefix) {
  SolverParameter p = records_solver(
      db, 6, "test_iter: 3 test_interval: 5 snapshot: 10 snapshot_prefix: \"" + prefix + "\"");
  p.set_max_iter(20);
  NetParameter& net = *p.mutable_net_param();
  for (LayerParameter& l : *net.mutable_layer()) {
    if (l.type() != "Data") continue;
    l.mutable_transform_param()->set_crop_size(3);
    l.mutable_transform_param()->set_mirror(l.include(0).phase() == TRAIN);
    if (l.include(0).phase() == TEST) l.mutable_data_param()->set_batch_size(5);
  }
  LayerParameter drop;
  read_text_proto_string(
      "name: \"drop\" type: \"Dropout\" bottom: \"ip1\" top: \"ip1\" "
      "dropout_param { dropout_ratio: 0.3 }",
      "drop", &drop);
  // After the ReLU (layer 3): move the new last layer up to place 4.
  *net.add_layer() = drop;
  for (int i = net.layer_size() - 1; i > 4; --i) net.mutable_layer()->SwapElements(i, i - 1);
  return p;
}

struct TrainedRun {
  std::vector<std::vector<float>> weights;
  std::vector<TestScore> scores;  // of the last test pass
};

// Trains resume_solver on device from the start, or from resume_file.
inline TrainedRun train_resume_solver(const SolverParameter& p, Device device,
                                      const std::string& resume_file = "") {
  Handle h(device);
  auto solver = create_solver<float>(p, device, h, "resume_solver");
  solver->set_overwrite_snapshots(true);
  solver->solve(resume_file);
  TrainedRun run;
  for (const Tensor<float>* w : solver->net().learnable_params())
    run.weights.push_back(w->data_vector());
  run.scores = solver->test_scores()[0];
  return run;
}

// Straight 20 iterations against 10 + resume + 10: the same weights and test scores, to the bit,
// with snapshots in either of Caffe's formats.
inline void expect_bit_exact_resume(
    Device device, SolverParameter::SnapshotFormat format = SolverParameter::BINARYPROTO) {
  TempDir dir;
  write_records(dir.file("records"));  // 64 records: 20 batches of 6 wrap around once
  SolverParameter p = resume_solver(dir.file("records"), dir.file("run"));
  p.set_snapshot_format(format);
  const TrainedRun straight = train_resume_solver(p, device);
  const std::string state =
      dir.file("run") + "_iter_10.solverstate" + (format == SolverParameter::HDF5 ? ".h5" : "");
  ASSERT_TRUE(std::filesystem::exists(state)) << state;
  const TrainedRun resumed = train_resume_solver(p, device, state);
  EXPECT_EQ(resumed.weights, straight.weights);
  ASSERT_EQ(resumed.scores.size(), straight.scores.size());
  for (size_t i = 0; i < straight.scores.size(); ++i)
    EXPECT_EQ(resumed.scores[i].value, straight.scores[i].value) << straight.scores[i].name;
}

}  // namespace crema::test
