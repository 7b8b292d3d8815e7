// Helpers of the solver tests: tiny classifier nets (Input or DummyData -> InnerProduct
// [-> ReLU -> InnerProduct] -> SoftmaxWithLoss, plus Accuracy in the TEST phase) written as
// prototxt text, fixed batches, and a double-precision reference of the gradient of a single
// InnerProduct + SoftmaxWithLoss net, the oracle of the update-rule tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/proto_io.h"
#include "crema.pb.h"
#include "solver/solver.h"

namespace crema::test {

inline constexpr int kDim = 3;      // input features
inline constexpr int kClasses = 3;  // outputs

// A classifier on `batch` samples of kDim features. hidden > 0 inserts IP(hidden) + ReLU.
// dummy: the data comes from a DummyData layer (uniform data redrawn each forward, label 1).
inline std::string tiny_net_text(int batch, int hidden = 0, bool dummy = false) {
  const std::string b = std::to_string(batch);
  std::string s = "name: \"tiny\"\n";
  if (dummy) {
    s += "layer { name: \"data\" type: \"DummyData\" top: \"data\" top: \"label\"\n"
         "  dummy_data_param { shape { dim: " +
         b + " dim: 3 } shape { dim: " + b +
         " }\n"
         "    data_filler { type: \"uniform\" min: -1 max: 1 }\n"
         "    data_filler { type: \"constant\" value: 1 } } }\n";
  } else {
    s += "layer { name: \"data\" type: \"Input\" top: \"data\" top: \"label\"\n"
         "  input_param { shape { dim: " +
         b + " dim: 3 } shape { dim: " + b + " } } }\n";
  }
  std::string bottom = "data";
  if (hidden > 0) {
    s += "layer { name: \"hid\" type: \"InnerProduct\" bottom: \"data\" top: \"hid\"\n"
         "  inner_product_param { num_output: " +
         std::to_string(hidden) +
         "    weight_filler { type: \"gaussian\" std: 0.5 }\n"
         "    bias_filler { type: \"constant\" value: 0.1 } } }\n"
         "layer { name: \"relu\" type: \"ReLU\" bottom: \"hid\" top: \"hid\" }\n";
    bottom = "hid";
  }
  s += "layer { name: \"ip\" type: \"InnerProduct\" bottom: \"" + bottom +
       "\" top: \"ip\"\n"
       "  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }\n"
       "  inner_product_param { num_output: 3\n"
       "    weight_filler { type: \"gaussian\" std: 0.5 }\n"
       "    bias_filler { type: \"constant\" value: 0.1 } } }\n"
       "layer { name: \"loss\" type: \"SoftmaxWithLoss\" bottom: \"ip\" bottom: \"label\"\n"
       "  top: \"loss\" }\n"
       "layer { name: \"acc\" type: \"Accuracy\" bottom: \"ip\" bottom: \"label\" top: \"acc\"\n"
       "  include { phase: TEST } }\n";
  return s;
}

// A solver parameter around tiny_net_text; extra is more SolverParameter text. The seed is 7
// unless extra sets random_seed.
inline SolverParameter tiny_solver(int batch, const std::string& extra, int hidden = 0,
                                   bool dummy = false) {
  SolverParameter p;
  const std::string seed = extra.find("random_seed") == std::string::npos ? "random_seed: 7\n" : "";
  read_text_proto_string(
      "net_param { " + tiny_net_text(batch, hidden, dummy) + " }\n" + seed + extra, "tiny_solver",
      &p);
  return p;
}

// A fixed batch: features in [-1, 1], labels cycling over the classes.
inline std::vector<double> batch_data(int batch) {
  std::vector<double> x(size_t(batch) * kDim);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(1.7 * double(i) + 0.3);
  return x;
}
inline std::vector<double> batch_labels(int batch) {
  std::vector<double> l(static_cast<size_t>(batch));
  for (int i = 0; i < batch; ++i) l[i] = double((i * 2 + 1) % kClasses);
  return l;
}

// Writes the fixed batch into the Input tops of a net.
template <typename Dtype>
void set_batch(Net<Dtype>& net, int batch) {
  const auto x = batch_data(batch), l = batch_labels(batch);
  net.blob_by_name("data")->set_data(std::vector<Dtype>(x.begin(), x.end()));
  net.blob_by_name("label")->set_data(std::vector<Dtype>(l.begin(), l.end()));
}

template <typename Dtype>
std::vector<double> to_double(const std::vector<Dtype>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// Gradient of mean_n -log softmax(W x_n + b)[label_n] with respect to W (kClasses x kDim) and
// b, in double. Returns the loss.
inline double reference_gradient(const std::vector<double>& w, const std::vector<double>& b,
                                 const std::vector<double>& x, const std::vector<double>& labels,
                                 std::vector<double>* dw, std::vector<double>* db) {
  const int n = int(labels.size());
  dw->assign(w.size(), 0.0);
  db->assign(b.size(), 0.0);
  double loss = 0;
  for (int s = 0; s < n; ++s) {
    double logits[kClasses], mx = -1e300, sum = 0;
    for (int o = 0; o < kClasses; ++o) {
      logits[o] = b[o];
      for (int k = 0; k < kDim; ++k) logits[o] += w[o * kDim + k] * x[s * kDim + k];
      mx = std::max(mx, logits[o]);
    }
    for (int o = 0; o < kClasses; ++o) sum += std::exp(logits[o] - mx);
    const int label = int(labels[s]);
    loss -= logits[label] - mx - std::log(sum);
    for (int o = 0; o < kClasses; ++o) {
      const double g = (std::exp(logits[o] - mx) / sum - (o == label ? 1.0 : 0.0)) / n;
      (*db)[o] += g;
      for (int k = 0; k < kDim; ++k) (*dw)[o * kDim + k] += g * x[s * kDim + k];
    }
  }
  return loss / n;
}

// A fresh, empty directory under the test temp dir.
inline std::string fresh_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace crema::test
