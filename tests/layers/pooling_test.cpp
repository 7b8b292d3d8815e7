// Pooling layer tests: Caffe's output sizes, forward against a naive reference, gradients, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "gradient_checker.h"
#include "test_util.h"

namespace crema::test {
namespace {

struct PoolCase {
  bool max;
  int k, p, s;
  bool ceil;
};

// Caffe's rule, written out independently: ceil (or floor) division, then the padding clip.
int out_dim(int in, int k, int p, int s, bool ceil) {
  const int span = in + 2 * p - k;
  int out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (p > 0 && (out - 1) * s >= in + p) --out;
  return out;
}

// Naive reference of Caffe's pooling: max over the window clipped to the input; average divides
// by the window clipped to the padded input.
std::vector<double> naive_pool(const std::vector<double>& x, int nc, int h, int w,
                               const PoolCase& pc, int oh, int ow) {
  std::vector<double> y(size_t(nc) * oh * ow);
  for (int i = 0; i < nc; ++i)
    for (int py = 0; py < oh; ++py)
      for (int px = 0; px < ow; ++px) {
        const int y0 = py * pc.s - pc.p, x0 = px * pc.s - pc.p;
        const int y1 = std::min(y0 + pc.k, h + pc.p), x1 = std::min(x0 + pc.k, w + pc.p);
        const double pool_size = double(y1 - y0) * (x1 - x0);
        double best = -1e300, sum = 0;
        for (int iy = std::max(y0, 0); iy < std::min(y1, h); ++iy)
          for (int ix = std::max(x0, 0); ix < std::min(x1, w); ++ix) {
            const double v = x[(size_t(i) * h + iy) * w + ix];
            best = std::max(best, v);
            sum += v;
          }
        y[(size_t(i) * oh + py) * ow + px] = pc.max ? best : sum / pool_size;
      }
  return y;
}

std::string pool_text(const PoolCase& pc) {
  std::ostringstream os;
  os << "type: 'Pooling' pooling_param { pool: " << (pc.max ? "MAX" : "AVE")
     << " kernel_size: " << pc.k << " pad: " << pc.p << " stride: " << pc.s
     << " round_mode: " << (pc.ceil ? "CEIL" : "FLOOR") << " }";
  return os.str();
}

// Distinct values spaced well beyond the finite-difference step, so no max window has a tie.
std::vector<double> distinct_values(size_t n, uint64_t seed) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), 0.0);
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  for (double& x : v) x = x * 0.05 - 1.0;
  return v;
}

TEST(PoolingLayer, OutputShapesFollowCaffeRounding) {
  struct Expect {
    int64_t in;
    std::string param;
    int64_t out;
  };
  const Expect cases[] = {
      {6, "kernel_size: 3 stride: 2", 3},                    // ceil(3 / 2) + 1
      {6, "kernel_size: 3 stride: 2 round_mode: FLOOR", 2},  // floor(3 / 2) + 1
      {6, "kernel_size: 2 stride: 2 pad: 1", 4},             // ceil(6 / 2) + 1, no clip
      {4, "kernel_size: 2 stride: 3 pad: 1", 2},  // ceil(4 / 3) + 1 = 3, clipped: 6 >= 4 + 1
      {6, "kernel_size: 3 stride: 1", 4},
      {6, "global_pooling: true", 1},
  };
  for (const Expect& e : cases) {
    SCOPED_TRACE(e.param);
    TensorSet<float> bottom, top;
    bottom.add({2, 3, e.in, e.in});
    top.add();
    auto layer = make_layer<float>("type: 'Pooling' pooling_param { " + e.param + " }");
    layer->setup(*bottom, *top);
    EXPECT_EQ(top[0]->shape(), (std::vector<int64_t>{2, 3, e.out, e.out}));
  }
}

TEST(PoolingLayer, ForwardMatchesNaiveReference) {
  const PoolCase cases[] = {
      {true, 3, 0, 2, true},  {true, 3, 1, 2, true},   {true, 2, 1, 3, true},
      {true, 3, 1, 2, false}, {false, 3, 0, 2, true},  {false, 3, 1, 2, true},
      {false, 2, 1, 3, true}, {false, 3, 2, 1, false},
  };
  const int n = 2, c = 3, h = 7, w = 6;
  for (const PoolCase& pc : cases) {
    SCOPED_TRACE(pool_text(pc));
    auto layer = make_layer<double>(pool_text(pc));
    TensorSet<double> bottom, top;
    bottom.add({n, c, h, w}, 5);
    top.add();
    layer->setup(*bottom, *top);
    const int oh = out_dim(h, pc.k, pc.p, pc.s, pc.ceil),
              ow = out_dim(w, pc.k, pc.p, pc.s, pc.ceil);
    ASSERT_EQ(top[0]->shape(), (std::vector<int64_t>{n, c, oh, ow}));
    Handle handle;
    layer->forward(handle, *bottom, *top);
    EXPECT_TRUE(all_close(top[0]->data_vector(),
                          naive_pool(bottom[0]->data_vector(), n * c, h, w, pc, oh, ow),
                          {1e-12, 1e-12}));
  }
}

TEST(PoolingLayer, GlobalAverageIsTheMean) {
  auto layer =
      make_layer<double>("type: 'Pooling' pooling_param { pool: AVE global_pooling: true }");
  TensorSet<double> bottom, top;
  bottom.add({1, 2, 3, 4}, 9);
  top.add();
  layer->setup(*bottom, *top);
  Handle handle;
  layer->forward(handle, *bottom, *top);
  const auto x = bottom[0]->data_vector();
  const double m0 = std::accumulate(x.begin(), x.begin() + 12, 0.0) / 12;
  const double m1 = std::accumulate(x.begin() + 12, x.end(), 0.0) / 12;
  EXPECT_TRUE(all_close(top[0]->data_vector(), std::vector<double>{m0, m1}, {1e-12, 1e-12}));
}

TEST(PoolingLayer, Gradients) {
  const PoolCase cases[] = {
      {true, 3, 0, 2, true},  {true, 3, 1, 2, true},  {true, 2, 1, 3, true},
      {false, 3, 1, 2, true}, {false, 2, 1, 3, true}, {false, 3, 0, 1, false},
  };
  for (const PoolCase& pc : cases) {
    SCOPED_TRACE(pool_text(pc));
    auto layer = make_layer<double>(pool_text(pc));
    TensorSet<double> bottom, top;
    bottom.add({2, 2, 5, 6});
    bottom[0]->set_data(distinct_values(bottom[0]->count(), 21));
    top.add();
    EXPECT_TRUE(
        check_gradient(*layer, *bottom, *top, GradientCheckOptions().step(1e-3).threshold(1e-6)));
  }
}

TEST(PoolingLayer, UnsupportedRequestsAreErrors) {
  TensorSet<float> bottom, top;
  bottom.add({1, 1, 4, 4});
  top.add();
  expect_error(
      [&] {
        make_layer<float>("type: 'Pooling' pooling_param { pool: STOCHASTIC kernel_size: 2 }")
            ->setup(*bottom, *top);
      },
      "STOCHASTIC is not supported");
  top.add();
  expect_error(
      [&] {
        make_layer<float>("type: 'Pooling' pooling_param { pool: MAX kernel_size: 2 }")
            ->setup(*bottom, *top);
      },
      "mask top is not supported");
}

TEST(PoolingLayer, KernelLargerThanInputIsAnError) {
  TensorSet<float> bottom, top;
  bottom.add({1, 1, 3, 3});
  top.add();
  EXPECT_THROW(make_layer<float>("type: 'Pooling' pooling_param { kernel_size: 6 pad: 1 }")
                   ->setup(*bottom, *top),
               Error);
}

}  // namespace
}  // namespace crema::test
