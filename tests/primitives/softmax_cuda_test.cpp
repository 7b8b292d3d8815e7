// softmax_fwd/bwd (kAuto and every row of the table that runs the shape), softmax_loss_fwd/bwd
// and accuracy_fwd on CUDA against the CPU implementation:
// the CPU tests' shapes plus classifier and spatial layer shapes (rows of up to 3000 classes take
// the block-per-row kernel, also with more rows than its grid has blocks), softmax and log-softmax,
// both blends, in place, f32 and f64; every loss normalization with and without an ignore label;
// invalid labels refused naming the position; accuracy with ties (integer scores, exact), top_k,
// ignore label and per-class.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/softmax.h"
#include "softmax_cases.h"

namespace crema::prim {
namespace {

using Shape = test::SoftmaxShape;
using test::loss_desc;
using test::make_labels;

// The CPU test's shapes, then rows the kernels hold differently: up to 128 channels (on a warp)
// or 1024 (on a block) are held in registers; longer ones (300 on a warp, 1025 and 3000 on a
// block) are read in chunks after the first.
const std::vector<Shape> kShapes = [] {
  std::vector<Shape> all = test::unit_softmax_shapes();
  for (const Shape& s : {Shape{64, 10, 1}, Shape{5, 3000, 1}, Shape{2, 21, 100}, Shape{3, 1025, 1},
                         Shape{70, 33, 1}, Shape{2048, 300, 1}})
    all.push_back(s);
  return all;
}();

template <typename T>
test::Tolerance tol() {
  // The absolute bound covers blends that cancel (alpha * log-softmax + beta * y near 0, with
  // log-softmax values near -8 at 3000 classes).
  return sizeof(T) == 8 ? test::Tolerance{1e-13, 1e-11, true} : test::Tolerance{1e-5, 1e-5, true};
}

template <typename T>
void check_softmax(const Shape& s, bool log, Blend blend, bool in_place) {
  SCOPED_TRACE(::testing::Message()
               << s.outer << "x" << s.channels << "x" << s.inner << (log ? " log" : "")
               << (blend.beta != 0 ? " blend" : "") << (in_place ? " in place" : "")
               << (sizeof(T) == 8 ? " f64" : " f32"));
  const SoftmaxDesc sd{dtype_of<T>(), s.outer, s.channels, s.inner, log};
  const size_t n = s.count();
  const auto x = random_vector<T>(n, 31, -8, 8);
  const auto dy = random_vector<T>(n, 32);
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);

  const auto y0 = in_place ? x : blend.beta != 0 ? random_vector<T>(n, 33) : test::poisoned<T>(n);
  std::vector<T> y_ref = y0;
  softmax_fwd(cpu, sd, in_place ? y_ref.data() : x.data(), y_ref.data(), blend);
  std::vector<T> y(n);
  softmax_fwd(cpu, sd, x.data(), y.data());
  const auto dx0 = in_place ? dy : blend.beta != 0 ? random_vector<T>(n, 34) : test::poisoned<T>(n);
  std::vector<T> dx_ref = dx0;
  softmax_bwd(cpu, sd, y.data(), in_place ? dx_ref.data() : dy.data(), dx_ref.data(), blend);

  // kAuto, then every row of the CUDA table that runs the shape.
  for (SoftmaxAlgo a : auto_then(softmax_algos(Device::kCUDA))) {
    SCOPED_TRACE(softmax_algo_name(a));
    SoftmaxDesc forced = sd;
    forced.algo = a;
    DeviceBuffer gx = to_gpu(x), gy = to_gpu(y0);
    if (softmax_fwd_unsupported(gpu, forced, gx.get(), gy.get(), blend)) continue;
    softmax_fwd(gpu, forced, in_place ? gy.get() : gx.get(), gy.get(), blend);
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, gy, n), y_ref, tol<T>())) << "forward";
    DeviceBuffer g_y = to_gpu(y), g_dy = to_gpu(dy), g_dx = to_gpu(dx0);
    softmax_bwd(gpu, forced, g_y.get(), in_place ? g_dx.get() : g_dy.get(), g_dx.get(), blend);
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_dx, n), dx_ref, tol<T>())) << "backward";
  }
}

TEST(SoftmaxCuda, ForwardAndBackwardMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const Shape& s : kShapes)
    for (bool log : {false, true})
      for (Blend blend : {Blend{}, Blend{0.5, -1.5}})
        for (bool in_place : {false, true}) {
          check_softmax<float>(s, log, blend, in_place);
          check_softmax<double>(s, log, blend, in_place);
        }
}

// More rows than the block-per-row grid has blocks (65536): some blocks take a second row, and
// their reductions must not overwrite shared memory that the first row's are still reading.
TEST(SoftmaxCuda, BlockRowsBeyondOneGridMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (bool log : {false, true}) check_softmax<float>({65536 + 130, 1025, 1}, log, Blend{}, false);
}

// Inputs far from zero: the max subtraction keeps exp finite.
TEST(SoftmaxCuda, StableForLargeInputs) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const Shape& s : {Shape{2, 9, 1}, Shape{2, 9, 5}})
    for (bool log : {false, true}) {
      const SoftmaxDesc sd{DataType::kFloat32, s.outer, s.channels, s.inner, log};
      auto x = random_vector<float>(s.count(), 35, 900, 1000);
      std::vector<float> ref(s.count());
      Handle cpu(Device::kCPU), gpu(Device::kCUDA);
      softmax_fwd(cpu, sd, x.data(), ref.data());
      DeviceBuffer gx = to_gpu(x), gy = to_gpu(test::poisoned<float>(s.count()));
      softmax_fwd(gpu, sd, gx.get(), gy.get());
      EXPECT_TRUE(all_close(from_gpu<float>(gpu, gy, s.count()), ref, {1e-6, 1e-5, true}));
    }
}

template <typename T>
void check_loss(const Shape& s, LossNormalization norm, bool has_ignore) {
  SCOPED_TRACE(::testing::Message()
               << s.outer << "x" << s.channels << "x" << s.inner << " norm " << int(norm)
               << (has_ignore ? " ignore" : "") << (sizeof(T) == 8 ? " f64" : " f32"));
  const SoftmaxLossDesc ld = loss_desc(dtype_of<T>(), s, norm, has_ignore, 255);
  const size_t n = s.count();
  std::vector<T> prob(n);
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const SoftmaxDesc sd{dtype_of<T>(), s.outer, s.channels, s.inner, false};
  softmax_fwd(cpu, sd, random_vector<T>(n, 41, -3, 3).data(), prob.data());
  const auto label = make_labels<T>(s, has_ignore, 255, 42);
  DeviceBuffer g_prob = to_gpu(prob), g_label = to_gpu(label);

  T loss_ref = 0;
  softmax_loss_fwd(cpu, ld, prob.data(), label.data(), &loss_ref);
  DeviceBuffer g_loss = to_gpu(test::poisoned<T>(1));
  softmax_loss_fwd(gpu, ld, g_prob.get(), g_label.get(), g_loss.get());
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_loss, 1), std::vector<T>{loss_ref}, tol<T>())) << "loss";

  for (double weight : {1.0, 0.3}) {
    std::vector<T> dx_ref(n);
    softmax_loss_bwd(cpu, ld, prob.data(), label.data(), weight, dx_ref.data());
    DeviceBuffer g_dx = to_gpu(test::poisoned<T>(n));
    softmax_loss_bwd(gpu, ld, g_prob.get(), g_label.get(), weight, g_dx.get());
    // scale * prob - scale is formed as on the CPU: exact agreement.
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_dx, n), dx_ref, {0, 0, true})) << "weight " << weight;
  }
}

TEST(SoftmaxLossCuda, EachNormalizationWithAndWithoutIgnoreMatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  // One block up to 4096 labels (16384 values of dx), several beyond.
  for (const Shape& s : {Shape{1, 5, 1}, Shape{6, 10, 1}, Shape{3, 7, 5}, Shape{64, 10, 1},
                         Shape{2, 1000, 1}, Shape{2, 21, 400}, Shape{50, 3, 100}})
    for (LossNormalization norm : {LossNormalization::kFull, LossNormalization::kValid,
                                   LossNormalization::kBatchSize, LossNormalization::kNone})
      for (bool has_ignore : {false, true}) {
        check_loss<float>(s, norm, has_ignore);
        check_loss<double>(s, norm, has_ignore);
      }
}

TEST(SoftmaxLossCuda, AllIgnoredAndEmptyGiveZero) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  const Shape s{2, 3, 1};
  const auto ld = loss_desc(DataType::kFloat32, s, LossNormalization::kValid, true, -1);
  DeviceBuffer g_prob = to_gpu(std::vector<float>{0, 0.5f, 0.5f, 0.25f, 0.25f, 0.5f});
  DeviceBuffer g_label = to_gpu(std::vector<float>{-1, -1});
  DeviceBuffer g_loss = to_gpu(test::poisoned<float>(1));
  softmax_loss_fwd(gpu, ld, g_prob.get(), g_label.get(), g_loss.get());
  EXPECT_EQ(from_gpu<float>(gpu, g_loss, 1)[0], 0.0f);
  DeviceBuffer g_dx = to_gpu(test::poisoned<float>(6));
  softmax_loss_bwd(gpu, ld, g_prob.get(), g_label.get(), 1.0, g_dx.get());
  for (float v : from_gpu<float>(gpu, g_dx, 6)) EXPECT_EQ(v, 0.0f);
  // An empty batch writes loss 0.
  const auto empty = loss_desc(DataType::kFloat32, {0, 3, 1}, LossNormalization::kValid, false, 0);
  DeviceBuffer g_loss2 = to_gpu(test::poisoned<float>(1));
  softmax_loss_fwd(gpu, empty, nullptr, nullptr, g_loss2.get());
  EXPECT_EQ(from_gpu<float>(gpu, g_loss2, 1)[0], 0.0f);
}

// The loss reports an invalid label where the host next waits for the stream (a deferred
// error, carrying the handle's error tag); accuracy throws at once. Neither writes anything.
TEST(SoftmaxLossCuda, BadLabelThrowsNamingItAndWritesNothing) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const Shape& s : {Shape{2, 4, 3}, Shape{2, 4, 3000}})  // one block; several
    for (float bad : {4.0f, 1.5f, -2.0f, nan}) {
      const auto ld = loss_desc(DataType::kFloat32, s, LossNormalization::kValid, true, -1);
      const size_t n = s.count(), positions = n / size_t(s.channels);
      DeviceBuffer g_prob = to_gpu(std::vector<float>(n, 0.25f));
      std::vector<float> label(positions);
      for (size_t p = 0; p < positions; ++p) label[p] = float(p % 4);
      DeviceBuffer g_good = to_gpu(label);
      DeviceBuffer g_loss = to_gpu(std::vector<float>(1, 0.0f));
      label[4] = bad;
      label[5] = bad;  // the first invalid position is named
      DeviceBuffer g_label = to_gpu(label);
      for (int op = 0; op < 3; ++op) {
        SCOPED_TRACE(::testing::Message()
                     << "labels " << positions << ", label " << bad << " op " << op);
        DeviceBuffer out = to_gpu(std::vector<float>(n, 7.0f));
        gpu.set_error_tag(100 + op);
        try {
          if (op == 0) {
            softmax_loss_fwd(gpu, ld, g_prob.get(), g_label.get(), out.get());
            // A valid call queued after the failing one does not hide it.
            softmax_loss_fwd(gpu, ld, g_prob.get(), g_good.get(), g_loss.get());
          } else if (op == 1) {
            softmax_loss_bwd(gpu, ld, g_prob.get(), g_label.get(), 1.0, out.get());
          } else {
            AccuracyDesc ad;
            ad.outer = s.outer, ad.channels = s.channels, ad.inner = s.inner;
            ad.has_ignore_label = true, ad.ignore_label = -1;
            accuracy_fwd(gpu, ad, g_prob.get(), g_label.get(), out.get(), nullptr);
            ADD_FAILURE() << "accuracy did not throw at once";
          }
          gpu.synchronize();
          ADD_FAILURE() << "no PrimError";
        } catch (const PrimError& e) {
          const std::string what = e.what();
          const char* name = op == 0   ? "softmax_loss_fwd"
                             : op == 1 ? "softmax_loss_bwd"
                                       : "accuracy";
          EXPECT_EQ(what.rfind(name, 0), 0u) << what;
          EXPECT_NE(what.find("position 4"), std::string::npos) << what;
          EXPECT_NE(what.find("label " + std::to_string(double(bad))), std::string::npos) << what;
          const auto* late = dynamic_cast<const DeferredError*>(&e);
          EXPECT_EQ(late != nullptr, op < 2);
          if (late) {
            EXPECT_EQ(late->tag(), uint64_t(100 + op));
          }
        }
        for (float v : from_gpu<float>(gpu, out, n)) EXPECT_EQ(v, 7.0f);
        EXPECT_NO_THROW(gpu.synchronize()) << "reported twice";
      }
    }
}

template <typename T>
void check_accuracy(const Shape& s, int top_k, bool has_ignore, bool per_class) {
  SCOPED_TRACE(::testing::Message()
               << s.outer << "x" << s.channels << "x" << s.inner << " top " << top_k
               << (has_ignore ? " ignore" : "") << (per_class ? " per class" : "")
               << (sizeof(T) == 8 ? " f64" : " f32"));
  AccuracyDesc ad;
  ad.dtype = dtype_of<T>();
  ad.outer = s.outer, ad.channels = s.channels, ad.inner = s.inner;
  ad.top_k = top_k;
  ad.has_ignore_label = has_ignore, ad.ignore_label = 3;
  // Few distinct scores: ties are common, and they count against the label.
  const auto scores = random_int_vector<T>(s.count(), 51, 0, 4);
  const auto label = make_labels<T>(s, has_ignore, 3, 52);
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  const size_t C = size_t(s.channels);
  std::vector<T> acc_ref(1), pc_ref(C);
  accuracy_fwd(cpu, ad, scores.data(), label.data(), acc_ref.data(),
               per_class ? pc_ref.data() : nullptr);
  DeviceBuffer g_scores = to_gpu(scores), g_label = to_gpu(label);
  DeviceBuffer g_acc = to_gpu(test::poisoned<T>(1)), g_pc = to_gpu(test::poisoned<T>(C));
  accuracy_fwd(gpu, ad, g_scores.get(), g_label.get(), g_acc.get(),
               per_class ? g_pc.get() : nullptr);
  EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_acc, 1), acc_ref, {0, 0, true})) << "accuracy";
  if (per_class) {
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, g_pc, C), pc_ref, {0, 0, true})) << "per class";
  }
}

TEST(AccuracyCuda, TopKIgnoreAndPerClassMatchCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const Shape& s :
       {Shape{50, 10, 1}, Shape{7, 6, 9}, Shape{4, 4, 1}, Shape{100, 1000, 1}, Shape{3, 21, 500}})
    for (int top_k : {1, 3})
      for (bool has_ignore : {false, true})
        for (bool per_class : {false, true}) {
          check_accuracy<float>(s, top_k, has_ignore, per_class);
          check_accuracy<double>(s, top_k, has_ignore, per_class);
        }
}

}  // namespace
}  // namespace crema::prim
