// A seeded run that draws from every source of randomness a step has -- LMDB records read in
// order across wrap-arounds, random crops and flips, dropout masks, a test net reading records
// of its own -- trained straight for 20 iterations, and again from its snapshot at iteration 10.
#pragma once

#include <string>
#include <vector>

#include "core/proto_io.h"
#include "data/data_test_util.h"
#include "data_parallel_util.h"
#include "solver/solver.h"

namespace crema::test {

inline SolverParameter resume_solver(const std::string& db, const std::string& prefix) {
  const std::string data = "type: \"Data\" top: \"data\" top: \"label\" data_param { source: \"" +
                           db + "\" backend: LMDB batch_size: ";
  const std::string net =
      "name: \"resume\" default_forward_math: FLOAT default_backward_math: FLOAT\n"
      "layer { name: \"data\" " +
      data +
      "6 } transform_param { scale: 0.00390625 crop_size: 3 mirror: true }\n"
      "  include { phase: TRAIN } }\n"
      "layer { name: \"data\" " +
      data +
      "5 } transform_param { scale: 0.00390625 crop_size: 3 } include { phase: TEST } }\n"
      "layer { name: \"ip1\" type: \"InnerProduct\" bottom: \"data\" top: \"ip1\"\n"
      "  inner_product_param { num_output: 8 weight_filler { type: \"gaussian\" std: 0.3 } } }\n"
      "layer { name: \"relu\" type: \"ReLU\" bottom: \"ip1\" top: \"ip1\" }\n"
      "layer { name: \"drop\" type: \"Dropout\" bottom: \"ip1\" top: \"ip1\"\n"
      "  dropout_param { dropout_ratio: 0.3 } }\n"
      "layer { name: \"ip2\" type: \"InnerProduct\" bottom: \"ip1\" top: \"ip2\"\n"
      "  inner_product_param { num_output: 4 weight_filler { type: \"gaussian\" std: 0.3 } } }\n"
      "layer { name: \"loss\" type: \"SoftmaxWithLoss\" bottom: \"ip2\" bottom: \"label\"\n"
      "  top: \"loss\" }\n"
      "layer { name: \"acc\" type: \"Accuracy\" bottom: \"ip2\" bottom: \"label\" top: \"acc\"\n"
      "  include { phase: TEST } }\n";
  SolverParameter p;
  read_text_proto_string("net_param { " + net +
                             " }\n"
                             "type: \"SGD\" base_lr: 0.5 momentum: 0.9 weight_decay: 0.001\n"
                             "lr_policy: \"fixed\" max_iter: 20 random_seed: 3 display: 0\n"
                             "test_iter: 3 test_interval: 5 snapshot: 10\n"
                             "snapshot_after_train: false snapshot_prefix: \"" +
                             prefix + "\"\n",
                         "resume_solver", &p);
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

// Straight 20 iterations against 10 + resume + 10: the same weights and test scores, to the bit.
inline void expect_bit_exact_resume(Device device) {
  TempDir dir;
  write_records(dir.file("records"));  // 64 records: 20 batches of 6 wrap around once
  const SolverParameter p = resume_solver(dir.file("records"), dir.file("run"));
  const TrainedRun straight = train_resume_solver(p, device);
  const TrainedRun resumed =
      train_resume_solver(p, device, dir.file("run") + "_iter_10.solverstate");
  EXPECT_EQ(resumed.weights, straight.weights);
  ASSERT_EQ(resumed.scores.size(), straight.scores.size());
  for (size_t i = 0; i < straight.scores.size(); ++i)
    EXPECT_EQ(resumed.scores[i].value, straight.scores[i].value) << straight.scores[i].name;
}

}  // namespace crema::test
