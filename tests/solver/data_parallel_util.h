// Helpers of the data-parallel tests, CPU and CUDA alike: an LMDB of small labelled records, a
// two-layer classifier reading it, and a run of train_data_parallel that keeps what each replica
// ended with.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/proto_io.h"
#include "core/replica.h"
#include "data/record_db.h"
#include "solver/data_parallel.h"

namespace crema::test {

// 64 records of 1 x 4 x 4 pixels, label i % 4, in an LMDB or a LevelDB.
inline void write_records(const std::string& path, RecordBackend backend = RecordBackend::kLmdb) {
  const std::unique_ptr<RecordWriter> db = create_record_writer(path, backend);
  RecordWriter& writer = *db;
  for (int i = 0; i < 64; ++i) {
    Datum d;
    d.set_channels(1);
    d.set_height(4);
    d.set_width(4);
    d.set_label(i % 4);
    std::string bytes(16, '\0');
    for (int j = 0; j < 16; ++j) bytes[size_t(j)] = char((i * 37 + j * 11 + (i % 4) * 50) % 256);
    d.set_data(bytes);
    char key[16];
    std::snprintf(key, sizeof key, "%08d", i);
    writer.put(key, d.SerializeAsString());
  }
  writer.commit();
}

// SGD with momentum and weight decay on Data -> IP(8) -> ReLU -> IP(4) -> SoftmaxWithLoss, with
// batch records per replica and pass, strict fp32; extra is more SolverParameter text.
inline SolverParameter records_solver(const std::string& db, int batch, const std::string& extra) {
  const std::string data =
      "type: \"Data\" top: \"data\" top: \"label\"\n"
      "  transform_param { scale: 0.00390625 }\n"
      "  data_param { source: \"" +
      db + "\" backend: LMDB batch_size: ";
  const std::string net =
      "name: \"records\" default_forward_math: FLOAT default_backward_math: FLOAT\n"
      "layer { name: \"data\" " +
      data + std::to_string(batch) +
      " } include { phase: TRAIN } }\n"
      "layer { name: \"data\" " +
      data +
      "16 } include { phase: TEST } }\n"
      "layer { name: \"ip1\" type: \"InnerProduct\" bottom: \"data\" top: \"ip1\"\n"
      "  inner_product_param { num_output: 8 weight_filler { type: \"gaussian\" std: 0.3 }\n"
      "    bias_filler { type: \"constant\" value: 0.1 } } }\n"
      "layer { name: \"relu\" type: \"ReLU\" bottom: \"ip1\" top: \"ip1\" }\n"
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
                             "lr_policy: \"fixed\" max_iter: 6 random_seed: 3 display: 0\n"
                             "snapshot_after_train: false\n" +
                             extra,
                         "records_solver", &p);
  return p;
}

// What a replica ended with.
struct ReplicaResult {
  std::vector<std::vector<float>> weights;  // per learnable parameter
  int iter = 0;
  bool stopped = false;
  size_t test_nets = 0;
  size_t test_scores = 0;  // of the first test net's latest pass
};

// Trains p on one replica per entry of device_ids (train_data_parallel), keeping what each ended
// with.
inline std::vector<ReplicaResult> run_replicas(const SolverParameter& p, Device device,
                                               const std::vector<int>& device_ids,
                                               std::function<SolverAction()> actions = {}) {
  std::vector<ReplicaResult> out(device_ids.size());
  DataParallelRun run;
  run.param = p;
  run.device = device;
  run.device_ids = device_ids;
  run.actions = std::move(actions);
  run.finished = [&out](Solver<float>& s) {
    ReplicaResult& r = out[size_t(this_replica().rank)];
    for (const Tensor<float>* w : s.net().learnable_params()) r.weights.push_back(w->data_vector());
    r.iter = s.iter();
    r.stopped = s.stopped_early();
    r.test_nets = s.test_nets().size();
    r.test_scores = s.test_scores().empty() ? 0 : s.test_scores()[0].size();
  };
  train_data_parallel(run);
  return out;
}

// Every weight of a within tol of b's.
inline void expect_near_weights(const ReplicaResult& a, const ReplicaResult& b, double tol) {
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (size_t p = 0; p < a.weights.size(); ++p) {
    ASSERT_EQ(a.weights[p].size(), b.weights[p].size());
    for (size_t i = 0; i < a.weights[p].size(); ++i)
      ASSERT_NEAR(a.weights[p][i], b.weights[p][i], tol) << "parameter " << p << " value " << i;
  }
}

}  // namespace crema::test
