// Layer test helpers: building a layer from a prototxt snippet, owning its tensors, and Caffe's
// numeric gradient check. The check runs double-precision layers on the CPU: it compares the
// analytic gradients of backward (bottom diffs and parameter diffs) with central differences
//   df/dv ~ (f(v + step) - f(v - step)) / (2 * step)
// of the objective f = sum over the chosen tops of sum_i top_data[i] * w[i], with fixed random
// weights w (for a loss top this is the loss times a random loss weight, which backward reads
// from the top's diff as the Net provides it). As in Caffe, a pair agrees when
// |analytic - numeric| <= threshold * max(|analytic|, |numeric|, 1), and points within
// kink_range of a kink (ReLU's 0) are skipped. A check that compares nothing, or whose
// gradients are all exactly zero, fails: it would prove nothing.
#pragma once

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/layer.h"
#include "core/tensor.h"
#include "crema.pb.h"
#include "error_util.h"
#include "layers/layer_registry.h"
#include "test_util.h"

namespace crema::test {

// Parses a LayerParameter from prototxt text, e.g. R"(type: "ReLU" relu_param {...})".
inline LayerParameter layer_param(const std::string& text, Phase phase = TRAIN) {
  LayerParameter p;
  if (!google::protobuf::TextFormat::ParseFromString(text, &p))
    throw Error("test prototxt does not parse: " + text);
  if (!p.has_name()) p.set_name("test_" + p.type());
  p.set_phase(phase);
  return p;
}

template <typename Dtype>
std::unique_ptr<Layer<Dtype>> make_layer(const std::string& text, Phase phase = TRAIN) {
  return create_layer<Dtype>(layer_param(text, phase), Device::kCPU);
}

// Owns CPU tensors and exposes them as the pointer vector the layer API takes.
template <typename Dtype>
class TensorSet {
 public:
  // A tensor of the given shape; the data is uniform in [lo, hi) from the seed.
  Tensor<Dtype>* add(const std::vector<int64_t>& shape, uint64_t seed = 0, double lo = -1.0,
                     double hi = 1.0) {
    owned_.push_back(std::make_unique<Tensor<Dtype>>(shape));
    Tensor<Dtype>* t = owned_.back().get();
    t->set_data(random_vector<Dtype>(size_t(t->count()), seed, lo, hi));
    ptrs_.push_back(t);
    return t;
  }
  // An unshaped tensor, for tops.
  Tensor<Dtype>* add() {
    owned_.push_back(std::make_unique<Tensor<Dtype>>());
    ptrs_.push_back(owned_.back().get());
    return ptrs_.back();
  }
  // Adds a tensor that is already in the set again (in-place layers).
  void alias(Tensor<Dtype>* t) { ptrs_.push_back(t); }

  const std::vector<Tensor<Dtype>*>& operator*() const { return ptrs_; }
  Tensor<Dtype>* operator[](size_t i) const { return ptrs_[i]; }
  size_t size() const { return ptrs_.size(); }

 private:
  std::vector<std::unique_ptr<Tensor<Dtype>>> owned_;
  std::vector<Tensor<Dtype>*> ptrs_;
};

// A float forward case checked by hand: the layer's parameters, and the shape and values top 0
// must have.
struct ForwardCase {
  std::string params;
  std::vector<int64_t> shape;
  std::vector<float> y;
};

// Sets layer up on bottom with one top, runs forward and expects top 0 to have c's shape and
// values: exactly, or within tol where given.
inline void expect_forward(Layer<float>& layer, const TensorSet<float>& bottom,
                           const ForwardCase& c, std::optional<Tolerance> tol = std::nullopt) {
  TensorSet<float> top;
  top.add();
  layer.setup(*bottom, *top);
  EXPECT_EQ(top[0]->shape(), c.shape);
  Handle h;
  layer.forward(h, *bottom, *top);
  if (tol)
    EXPECT_TRUE(all_close(top[0]->data_vector(), c.y, *tol));
  else
    EXPECT_EQ(top[0]->data_vector(), c.y);
}

// Runs f, which must throw crema::Error containing text.
template <typename F>
void expect_error(const F& f, const std::string& text) {
  const std::string what = error_of(f);
  EXPECT_NE(what.find(text), std::string::npos) << what;
}

// The same layer kind run twice on equal inputs, sep on its own bottom and top and inp in place
// (top == bottom), for the tests that in place gives the separate-buffer results. The steps are
// separate so that a test can set blobs or diffs between them.
class InPlacePair {
 public:
  // The bottoms: shape, uniform in [lo, hi) from the seed.
  InPlacePair(Layer<double>& sep, Layer<double>& inp, const std::vector<int64_t>& shape,
              uint64_t seed, double lo = -1.0, double hi = 1.0)
      : sep_(sep), inp_(inp) {
    bottom_.add(shape, seed, lo, hi);
    top_.add();
    io_.add(shape, seed, lo, hi);
  }
  void setup() {
    sep_.setup(*bottom_, *top_);
    inp_.setup(*io_, *io_);
  }
  // Runs both forwards and expects the same outputs within tol.
  void forward(Tolerance tol) {
    sep_.forward(h_, *bottom_, *top_);
    inp_.forward(h_, *io_, *io_);
    EXPECT_TRUE(all_close(io_[0]->data_vector(), top_[0]->data_vector(), tol));
  }
  // Runs both backwards from the same top gradient, uniform in [-1, 1) from the seed, and expects
  // the same bottom gradients within tol.
  void backward(uint64_t seed, Tolerance tol) {
    const auto dy = random_vector<double>(size_t(top_[0]->count()), seed);
    top_[0]->set_diff(dy);
    io_[0]->set_diff(dy);
    sep_.backward(h_, *top_, {true}, *bottom_);
    inp_.backward(h_, *io_, {true}, *io_);
    EXPECT_TRUE(all_close(io_[0]->diff_vector(), bottom_[0]->diff_vector(), tol));
  }

 private:
  Layer<double>& sep_;
  Layer<double>& inp_;
  TensorSet<double> bottom_, top_, io_;
  Handle h_;
};

// Sets layer up on `bottom` (one tensor) with one top, which must take the bottom's shape, runs
// forward and returns the top's values: the forward tests of the layers that keep their input's
// shape.
template <typename Dtype>
std::vector<Dtype> forward_keeping_shape(Layer<Dtype>& layer, const TensorSet<Dtype>& bottom) {
  TensorSet<Dtype> top;
  top.add();
  layer.setup(*bottom, *top);
  EXPECT_EQ(top[0]->shape(), bottom[0]->shape());
  Handle h;
  layer.forward(h, *bottom, *top);
  return top[0]->data_vector();
}

// The message of the crema::Error that setting layer up on bottoms of the given shapes (uniform
// in [-1, 1) from seed 0) and one top throws, or "(no error)".
template <typename Dtype>
std::string setup_error(Layer<Dtype>& layer, const std::vector<std::vector<int64_t>>& shapes) {
  TensorSet<Dtype> bottom, top;
  for (const std::vector<int64_t>& shape : shapes) bottom.add(shape);
  top.add();
  return error_of([&] { layer.setup(*bottom, *top); });
}

// The same for the float layer of `text` on one bottom of `shape`.
inline std::string setup_error(const std::string& text, const std::vector<int64_t>& shape) {
  return setup_error(*make_layer<float>(text), {shape});
}

// Expects setting layer up on bottoms of the given shapes to throw crema::Error containing text.
template <typename Dtype>
void expect_setup_error(Layer<Dtype>& layer, const std::vector<std::vector<int64_t>>& shapes,
                        const std::string& text) {
  const std::string what = setup_error(layer, shapes);
  EXPECT_NE(what.find(text), std::string::npos) << what;
}

// Options of check_gradient, set by chaining: GradientCheckOptions().threshold(1e-6).bottoms({0}).
struct GradientCheckOptions {
  double step_ = 1e-3;
  double threshold_ = 1e-3;
  double kink_ = 0.0;
  double kink_range_ = -1.0;         // negative: skip nothing
  std::vector<int> bottoms_;         // bottoms to check; empty = all
  bool params_ = true;               // also check every parameter blob
  std::vector<int> objective_tops_;  // tops in the objective; empty = all
  uint64_t seed_ = 1701;             // objective weights and the Handle seed before each forward
  bool allow_all_zero_ = false;      // gradients that are legitimately all zero

  GradientCheckOptions& step(double v) {
    step_ = v;
    return *this;
  }
  GradientCheckOptions& threshold(double v) {
    threshold_ = v;
    return *this;
  }
  GradientCheckOptions& kink(double at, double range) {
    kink_ = at;
    kink_range_ = range;
    return *this;
  }
  GradientCheckOptions& bottoms(std::vector<int> v) {
    bottoms_ = std::move(v);
    return *this;
  }
  GradientCheckOptions& params(bool v) {
    params_ = v;
    return *this;
  }
  GradientCheckOptions& objective_tops(std::vector<int> v) {
    objective_tops_ = std::move(v);
    return *this;
  }
  GradientCheckOptions& seed(uint64_t v) {
    seed_ = v;
    return *this;
  }
  GradientCheckOptions& allow_all_zero(bool v) {
    allow_all_zero_ = v;
    return *this;
  }
};

namespace detail {

template <typename Dtype>
double objective(const std::vector<Tensor<Dtype>*>& top, const std::vector<int>& tops,
                 const std::vector<std::vector<double>>& weights) {
  double f = 0;
  for (size_t i = 0; i < tops.size(); ++i) {
    const std::vector<Dtype> y = top[tops[i]]->data_vector();
    for (size_t j = 0; j < y.size(); ++j) f += double(y[j]) * weights[i][j];
  }
  return f;
}

}  // namespace detail

// Sets the layer up on the given tensors (the caller fills the bottoms first), runs forward and
// backward once for the analytic gradients, then perturbs every checked value.
template <typename Dtype>
::testing::AssertionResult check_gradient(Layer<Dtype>& layer,
                                          const std::vector<Tensor<Dtype>*>& bottom,
                                          const std::vector<Tensor<Dtype>*>& top,
                                          GradientCheckOptions opt = {}) {
  Handle h(Device::kCPU);
  layer.setup(bottom, top);
  if (opt.bottoms_.empty())
    for (size_t i = 0; i < bottom.size(); ++i) opt.bottoms_.push_back(int(i));
  if (opt.objective_tops_.empty())
    for (size_t i = 0; i < top.size(); ++i) opt.objective_tops_.push_back(int(i));

  auto forward = [&] {
    h.set_seed(opt.seed_);
    layer.forward(h, bottom, top);
  };
  forward();
  std::mt19937_64 gen(opt.seed_);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<std::vector<double>> weights;
  for (int t : opt.objective_tops_) {
    weights.emplace_back(top[t]->count());
    for (double& w : weights.back()) w = dist(gen);
  }

  // Poison bottom diffs before setting top diffs: backward must overwrite every bottom value,
  // and a top sharing its bottom's diff (Flatten) must still see the weights.
  std::vector<bool> propagate_down(bottom.size(), false);
  for (int b : opt.bottoms_) {
    propagate_down[b] = true;
    bottom[b]->fill_diff(std::numeric_limits<Dtype>::quiet_NaN());
  }
  for (Tensor<Dtype>* t : top) t->fill_diff(0);
  for (size_t i = 0; i < opt.objective_tops_.size(); ++i) {
    const std::vector<double>& w = weights[i];
    top[opt.objective_tops_[i]]->set_diff(std::vector<Dtype>(w.begin(), w.end()));
  }
  for (auto& blob : layer.blobs()) blob->fill_diff(0);
  layer.backward(h, top, propagate_down, bottom);

  // The values to perturb and their analytic gradients.
  struct Checked {
    std::string name;
    Tensor<Dtype>* tensor;
    std::vector<Dtype> grad;
  };
  std::vector<Checked> checked;
  for (int b : opt.bottoms_)
    checked.push_back({"bottom " + std::to_string(b), bottom[b], bottom[b]->diff_vector()});
  if (opt.params_)
    for (size_t i = 0; i < layer.blobs().size(); ++i)
      checked.push_back(
          {"param " + std::to_string(i), layer.blobs()[i].get(), layer.blobs()[i]->diff_vector()});

  size_t compared = 0, bad = 0, nonzero = 0;
  double max_err = 0;
  std::ostringstream first;
  for (Checked& c : checked) {
    Dtype* v = c.tensor->mutable_data();
    for (int64_t j = 0; j < c.tensor->count(); ++j) {
      const Dtype x = v[j];
      if (opt.kink_range_ >= 0 && std::fabs(double(x) - opt.kink_) < opt.kink_range_) continue;
      v[j] = Dtype(double(x) + opt.step_);
      forward();
      const double f_plus = detail::objective(top, opt.objective_tops_, weights);
      v[j] = Dtype(double(x) - opt.step_);
      forward();
      const double f_minus = detail::objective(top, opt.objective_tops_, weights);
      v[j] = x;
      const double numeric = (f_plus - f_minus) / (2 * opt.step_);
      const double analytic = double(c.grad[j]);
      const double scale = std::max({std::fabs(analytic), std::fabs(numeric), 1.0});
      const double err = std::fabs(analytic - numeric);
      ++compared;
      if (analytic != 0) ++nonzero;
      if (!(err <= opt.threshold_ * scale)) {  // also catches NaN (an unwritten diff)
        if (bad < 5)
          first << " " << c.name << "[" << j << "]: analytic " << analytic << " numeric " << numeric
                << ";";
        ++bad;
      }
      if (std::isfinite(err)) max_err = std::max(max_err, err / scale);
    }
  }
  forward();  // leave the tops consistent with the restored data
  if (compared == 0) return ::testing::AssertionFailure() << "gradient check compared nothing";
  if (bad)
    return ::testing::AssertionFailure()
           << bad << " of " << compared << " gradients differ (max scaled error " << max_err
           << "):" << first.str();
  if (nonzero == 0 && !opt.allow_all_zero_)
    return ::testing::AssertionFailure()
           << "vacuous gradient check: all " << compared << " analytic gradients are zero";
  return ::testing::AssertionSuccess() << compared << " gradients agree";
}

// One bottom: its shape, and values uniform in [lo, hi) from the seed (as TensorSet::add).
struct Filled {
  std::vector<int64_t> shape;
  uint64_t seed = 0;
  double lo = -1.0, hi = 1.0;
};

// The gradient check of a layer with one bottom, filled as `bottom`, and one top.
template <typename Dtype>
::testing::AssertionResult check_gradient(Layer<Dtype>& layer, const Filled& bottom,
                                          GradientCheckOptions opt = {}) {
  TensorSet<Dtype> b, t;
  b.add(bottom.shape, bottom.seed, bottom.lo, bottom.hi);
  t.add();
  return check_gradient(layer, *b, *t, std::move(opt));
}

}  // namespace crema::test
