// The exporter tests' harness: a net with random weights and inputs is run forward by crema,
// exported, and the exported graph is run by the reference evaluator (onnx_reference.h) on the
// same inputs; the outputs must agree.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/net.h"
#include "core/proto_io.h"
#include "core/upgrade_proto.h"
#include "export/onnx_export.h"
#include "onnx_reference.h"
#include "proto_test_util.h"

namespace crema::test {

inline NetParameter parse_net(const std::string& text) {
  NetParameter p = test::parse_text<NetParameter>(text, "test net");
  upgrade_net(&p, "test net");
  return p;
}

// Every learned blob uniform in [-1, 1), except what must be positive: BatchNorm's variance sums
// and their weight (2, so that the division by it is exercised). Weight matrices and filters
// (blob 0 with 2 or more axes) are scaled to variance 1 / fan-in, so that activations keep their
// size through deep nets.
inline void randomize_params(Net<float>& net, uint64_t seed) {
  std::mt19937_64 gen(seed);
  for (const auto& layer : net.layers()) {
    const bool batch_norm = std::string(layer->type()) == "BatchNorm";
    for (size_t b = 0; b < layer->blobs().size(); ++b) {
      Tensor<float>& t = *layer->blobs()[b];
      double hi = 1.0;
      if (b == 0 && t.num_axes() >= 2) hi = std::sqrt(3.0 * double(t.shape(0)) / double(t.count()));
      std::uniform_real_distribution<double> dist(batch_norm && b == 1 ? 0.5 : -hi, hi);
      std::vector<float> v(size_t(t.count()));
      for (float& x : v) x = float(dist(gen));
      if (batch_norm && b == 2) std::fill(v.begin(), v.end(), 2.0f);
      t.set_data(v);
    }
  }
}

// The Input layers' tops, filled with uniform values from the seed, as reference inputs.
inline RefValues fill_inputs(Net<float>& net, uint64_t seed) {
  RefValues inputs;
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (int i = 0; i < net.num_layers(); ++i) {
    if (std::string(net.layers()[size_t(i)]->type()) != "Input") continue;
    for (size_t j = 0; j < net.top_vecs()[size_t(i)].size(); ++j) {
      Tensor<float>& t = *net.top_vecs()[size_t(i)][j];
      std::vector<float> v(size_t(t.count()));
      for (float& x : v) x = float(dist(gen));
      t.set_data(v);
      inputs[net.layers()[size_t(i)]->param().top(int(j))] = {t.shape(), {v.begin(), v.end()}};
    }
  }
  return inputs;
}

// Runs crema's forward on the inputs already in the net and the reference on `inputs`; returns
// "" when every output agrees within tol * max(1, largest reference magnitude), else what
// differs.
inline std::string compare_outputs(Net<float>& net, const onnx::ModelProto& model,
                                   const RefValues& inputs, double tol) {
  prim::Handle h(Device::kCPU);
  net.forward(h);
  RefValues got;
  try {
    got = run_onnx_reference(model, inputs);
  } catch (const std::exception& e) {
    return std::string("reference run failed: ") + e.what();
  }
  std::ostringstream why;
  const auto& names = net.output_blob_names();
  if (got.size() != names.size()) why << got.size() << " outputs, crema has " << names.size();
  for (size_t k = 0; k < names.size(); ++k) {
    const auto it = got.find(names[k]);
    if (it == got.end()) {
      why << "no output " << names[k] << "; ";
      continue;
    }
    const Tensor<float>& t = *net.output_blobs()[k];
    if (it->second.dims != t.shape()) {
      why << names[k] << ": shape (" << ::testing::PrintToString(it->second.dims) << ") vs crema ("
          << t.shape_string() << "); ";
      continue;
    }
    const std::vector<float> want = t.data_vector();
    double scale = 1, worst = 0;
    size_t at = 0;
    for (double v : it->second.values) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < want.size(); ++i) {
      const double err = std::abs(double(want[i]) - it->second.values[i]);
      if (!(err <= worst)) {
        worst = err;
        at = i;
      }
    }
    if (!(worst <= tol * scale))
      why << names[k] << ": max error " << worst << " at " << at << " (crema " << want[at]
          << ", onnx " << it->second.values[at] << ", scale " << scale << "); ";
    // A comparison of nothing but zeros would pass vacuously.
    const bool all_zero = std::all_of(want.begin(), want.end(), [](float v) { return v == 0; });
    if (all_zero && want.size() > 1) why << names[k] << ": crema's output is all zeros; ";
  }
  return why.str();
}

// Builds `text` in the TEST phase with random weights and inputs, exports it and compares.
inline std::string export_and_compare(const NetParameter& param, const OnnxExportOptions& options,
                                      double tol, onnx::ModelProto* exported = nullptr) {
  Net<float> net(param, TEST, Device::kCPU);
  randomize_params(net, 7);
  const RefValues inputs = fill_inputs(net, 11);
  onnx::ModelProto model = net_to_onnx(net, options);
  const std::string diff = compare_outputs(net, model, inputs, tol);
  if (exported) *exported = model;
  return diff;
}

}  // namespace crema::test
