// The loss primitives on CUDA against the CPU implementation: forward (the scalar stays on the
// device, in loss[0]) and backward of contrastive (both versions), euclidean, hinge (L1, L2),
// infogain (with ignored positions, every normalization), multinomial logistic and sigmoid
// cross entropy (with and without the ignore label, every normalization), f32 and f64, on the
// CPU tests' sizes and on classifier-sized ones (ImageNet's 1000 classes, a batch of 64).
// Bad labels must throw as on the CPU, before anything is written.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/losses.h"

namespace crema::prim {
namespace {

template <typename T>
DataType dt() {
  return sizeof(T) == 8 ? DataType::kFloat64 : DataType::kFloat32;
}

template <typename T>
test::Tolerance tol() {
  return sizeof(T) == 8 ? test::Tolerance{1e-12, 1e-11, true} : test::Tolerance{1e-6, 1e-5, true};
}

// Labels n % classes, every ignore_every-th (from 1) replaced by the ignore value.
template <typename T>
std::vector<T> labels(int64_t n, int64_t classes, int ignore_every = 0, int ignore = -1) {
  std::vector<T> l(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    l[size_t(i)] = (ignore_every && i % ignore_every == 1) ? T(ignore) : T((i * 7 + 3) % classes);
  return l;
}

// One scalar from the GPU.
template <typename T>
std::vector<T> scalar(Handle& gpu, const DeviceBuffer& b) {
  return from_gpu<T>(gpu, b, 1);
}

struct Size {
  int64_t num, dim;
};
const Size kSizes[] = {{1, 1}, {4, 5}, {7, 3}, {64, 1000}, {3, 70001}, {100003, 2}};

template <typename T>
void euclidean_and_contrastive() {
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  for (const Size& s : kSizes) {
    SCOPED_TRACE(std::to_string(s.num) + "x" + std::to_string(s.dim));
    const size_t n = size_t(s.num * s.dim);
    const auto a = random_vector<T>(n, 1), b = random_vector<T>(n, 2);
    std::vector<T> sim(size_t(s.num));
    for (size_t i = 0; i < sim.size(); ++i) sim[i] = T(i % 3 == 0);
    const DeviceBuffer ga = to_gpu(a), gb = to_gpu(b), gsim = to_gpu(sim);
    {
      const EuclideanLossDesc d{dt<T>(), s.num, s.dim};
      std::vector<T> loss(1), da(n), db(n);
      euclidean_loss_fwd(cpu, d, a.data(), b.data(), loss.data());
      euclidean_loss_bwd(cpu, d, a.data(), b.data(), 0.7, da.data(), db.data());
      DeviceBuffer gl = to_gpu(test::poisoned<T>(1)), gda = to_gpu(test::poisoned<T>(n)),
                   gdb = to_gpu(test::poisoned<T>(n));
      euclidean_loss_fwd(gpu, d, ga.get(), gb.get(), gl.get());
      euclidean_loss_bwd(gpu, d, ga.get(), gb.get(), 0.7, gda.get(), gdb.get());
      EXPECT_TRUE(all_close(scalar<T>(gpu, gl), loss, tol<T>())) << "euclidean fwd";
      EXPECT_TRUE(all_close(from_gpu<T>(gpu, gda, n), da, tol<T>())) << "euclidean da";
      EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdb, n), db, tol<T>())) << "euclidean db";
      euclidean_loss_bwd(gpu, d, ga.get(), gb.get(), 0.7, nullptr, gdb.get());  // da not wanted
      EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdb, n), db, tol<T>())) << "euclidean db only";
    }
    for (bool legacy : {false, true}) {
      SCOPED_TRACE(legacy ? "legacy" : "");
      // A margin near the typical distance, so both dissimilar branches occur.
      const double margin = (legacy ? 0.66 : 0.82) * double(s.dim);
      const ContrastiveLossDesc d{dt<T>(), s.num, s.dim, legacy ? margin : std::sqrt(margin),
                                  legacy};
      std::vector<T> loss(1), da(n), db(n);
      contrastive_loss_fwd(cpu, d, a.data(), b.data(), sim.data(), loss.data());
      contrastive_loss_bwd(cpu, d, a.data(), b.data(), sim.data(), 1.3, da.data(), db.data());
      DeviceBuffer gl = to_gpu(test::poisoned<T>(1)), gda = to_gpu(test::poisoned<T>(n)),
                   gdb = to_gpu(test::poisoned<T>(n));
      contrastive_loss_fwd(gpu, d, ga.get(), gb.get(), gsim.get(), gl.get());
      contrastive_loss_bwd(gpu, d, ga.get(), gb.get(), gsim.get(), 1.3, gda.get(), gdb.get());
      EXPECT_TRUE(all_close(scalar<T>(gpu, gl), loss, tol<T>())) << "contrastive fwd";
      EXPECT_TRUE(all_close(from_gpu<T>(gpu, gda, n), da, tol<T>())) << "contrastive da";
      EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdb, n), db, tol<T>())) << "contrastive db";
    }
  }
}

template <typename T>
void hinge_and_mlogistic() {
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  for (const Size& s : kSizes) {
    SCOPED_TRACE(std::to_string(s.num) + "x" + std::to_string(s.dim));
    const size_t n = size_t(s.num * s.dim);
    const auto x = random_vector<T>(n, 1, -2, 2), prob = random_vector<T>(n, 2, 0, 1);
    const auto l = labels<T>(s.num, s.dim);
    const DeviceBuffer gx = to_gpu(x), gp = to_gpu(prob), glab = to_gpu(l);
    for (HingeNorm norm : {HingeNorm::kL1, HingeNorm::kL2}) {
      const HingeLossDesc d{dt<T>(), s.num, s.dim, norm};
      std::vector<T> loss(1), dx(n);
      hinge_loss_fwd(cpu, d, x.data(), l.data(), loss.data());
      hinge_loss_bwd(cpu, d, x.data(), l.data(), 0.9, dx.data());
      DeviceBuffer gl = to_gpu(test::poisoned<T>(1)), gdx = to_gpu(test::poisoned<T>(n));
      hinge_loss_fwd(gpu, d, gx.get(), glab.get(), gl.get());
      hinge_loss_bwd(gpu, d, gx.get(), glab.get(), 0.9, gdx.get());
      EXPECT_TRUE(all_close(scalar<T>(gpu, gl), loss, tol<T>())) << "hinge fwd " << int(norm);
      EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdx, n), dx, tol<T>())) << "hinge bwd " << int(norm);
    }
    {
      const MultinomialLogisticLossDesc d{dt<T>(), s.num, s.dim};
      std::vector<T> loss(1), dx(n);
      multinomial_logistic_loss_fwd(cpu, d, prob.data(), l.data(), loss.data());
      multinomial_logistic_loss_bwd(cpu, d, prob.data(), l.data(), 1.1, dx.data());
      DeviceBuffer gl = to_gpu(test::poisoned<T>(1)), gdx = to_gpu(test::poisoned<T>(n));
      multinomial_logistic_loss_fwd(gpu, d, gp.get(), glab.get(), gl.get());
      multinomial_logistic_loss_bwd(gpu, d, gp.get(), glab.get(), 1.1, gdx.get());
      EXPECT_TRUE(all_close(scalar<T>(gpu, gl), loss, tol<T>())) << "mlogistic fwd";
      EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdx, n), dx, tol<T>())) << "mlogistic bwd";
    }
  }
}

const LossNormalization kModes[] = {LossNormalization::kFull, LossNormalization::kValid,
                                    LossNormalization::kBatchSize, LossNormalization::kNone};

template <typename T>
void sigmoid_cross_entropy() {
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  for (const Size& s : kSizes) {
    const size_t n = size_t(s.num * s.dim);
    const auto x = random_vector<T>(n, 1, -30, 30);  // saturated logits on both sides
    auto t = random_vector<T>(n, 2, 0, 1);
    for (size_t i = 1; i < n; i += 5) t[i] = T(-1);  // the ignore label when enabled
    const DeviceBuffer gx = to_gpu(x), gt = to_gpu(t);
    for (bool ignore : {false, true})
      for (LossNormalization mode : kModes) {
        SCOPED_TRACE(std::to_string(s.num) + "x" + std::to_string(s.dim) + " ignore " +
                     std::to_string(ignore) + " mode " + std::to_string(int(mode)));
        const SigmoidCrossEntropyLossDesc d{dt<T>(), s.num, s.dim, ignore, -1, mode};
        std::vector<T> loss(1), dx(n);
        sigmoid_cross_entropy_loss_fwd(cpu, d, x.data(), t.data(), loss.data());
        sigmoid_cross_entropy_loss_bwd(cpu, d, x.data(), t.data(), 0.8, dx.data());
        DeviceBuffer gl = to_gpu(test::poisoned<T>(1)), gdx = to_gpu(test::poisoned<T>(n));
        sigmoid_cross_entropy_loss_fwd(gpu, d, gx.get(), gt.get(), gl.get());
        sigmoid_cross_entropy_loss_bwd(gpu, d, gx.get(), gt.get(), 0.8, gdx.get());
        EXPECT_TRUE(all_close(scalar<T>(gpu, gl), loss, tol<T>())) << "sce fwd";
        EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdx, n), dx, tol<T>())) << "sce bwd";
      }
  }
}

template <typename T>
void infogain() {
  struct Shape {
    int64_t outer, channels, inner;
  };
  const Shape shapes[] = {{2, 3, 4}, {5, 4, 1}, {1, 2, 7}, {64, 1000, 1}, {2, 21, 500}};
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  for (const Shape& s : shapes) {
    const int64_t C = s.channels, P = s.outer * s.inner;
    const size_t n = size_t(P * C);
    const auto prob = random_vector<T>(n, 1, 0, 1);
    const auto H = random_vector<T>(size_t(C * C), 2, 0, 1);
    const DeviceBuffer gp = to_gpu(prob), gH = to_gpu(H);
    for (bool ignore : {false, true})
      for (LossNormalization mode : kModes) {
        SCOPED_TRACE(std::to_string(s.outer) + "x" + std::to_string(C) + "x" +
                     std::to_string(s.inner) + " ignore " + std::to_string(ignore) + " mode " +
                     std::to_string(int(mode)));
        // The ignore label is a valid class here: ignoring must win.
        const int ign = int(C > 1 ? 1 : 0);
        const auto l = labels<T>(P, C, ignore ? 3 : 0, ign);
        const DeviceBuffer gl_ = to_gpu(l);
        const InfogainLossDesc d{dt<T>(), s.outer, C, s.inner, ignore, ign, mode};
        std::vector<T> loss(1), dx(n);
        infogain_loss_fwd(cpu, d, prob.data(), l.data(), H.data(), loss.data());
        infogain_loss_bwd(cpu, d, prob.data(), l.data(), H.data(), 0.6, dx.data());
        DeviceBuffer gl = to_gpu(test::poisoned<T>(1)), gdx = to_gpu(test::poisoned<T>(n));
        infogain_loss_fwd(gpu, d, gp.get(), gl_.get(), gH.get(), gl.get());
        infogain_loss_bwd(gpu, d, gp.get(), gl_.get(), gH.get(), 0.6, gdx.get());
        EXPECT_TRUE(all_close(scalar<T>(gpu, gl), loss, tol<T>())) << "infogain fwd";
        EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdx, n), dx, tol<T>())) << "infogain bwd";
      }
  }
}

TEST(LossesCuda, EuclideanAndContrastive) {
  CREMA_SKIP_WITHOUT_GPU();
  euclidean_and_contrastive<float>();
  euclidean_and_contrastive<double>();
}

TEST(LossesCuda, HingeAndMultinomialLogistic) {
  CREMA_SKIP_WITHOUT_GPU();
  hinge_and_mlogistic<float>();
  hinge_and_mlogistic<double>();
}

TEST(LossesCuda, SigmoidCrossEntropy) {
  CREMA_SKIP_WITHOUT_GPU();
  sigmoid_cross_entropy<float>();
  sigmoid_cross_entropy<double>();
}

TEST(LossesCuda, Infogain) {
  CREMA_SKIP_WITHOUT_GPU();
  infogain<float>();
  infogain<double>();
}

// A bad label throws the CPU's message and leaves the outputs untouched.
TEST(LossesCuda, BadLabelThrowsBeforeWriting) {
  CREMA_SKIP_WITHOUT_GPU();
  Handle gpu(Device::kCUDA);
  const std::vector<double> x = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
  const std::vector<double> bad = {1, 3};  // 3 is not in [0, 3)
  const DeviceBuffer gx = to_gpu(x), gbad = to_gpu(bad);
  DeviceBuffer gdx = to_gpu(std::vector<double>(6, 42.0)), gl = to_gpu(std::vector<double>{42});
  try {
    hinge_loss_fwd(gpu, HingeLossDesc{DataType::kFloat64, 2, 3}, gx.get(), gbad.get(), gl.get());
    ADD_FAILURE() << "no throw";
  } catch (const PrimError& e) {
    EXPECT_NE(
        std::string(e.what()).find("label 3.000000 at position 1 is not an integer in [0, 3)"),
        std::string::npos)
        << e.what();
  }
  EXPECT_THROW(
      multinomial_logistic_loss_bwd(gpu, MultinomialLogisticLossDesc{DataType::kFloat64, 2, 3},
                                    gx.get(), gbad.get(), 1.0, gdx.get()),
      PrimError);
  EXPECT_EQ(from_gpu<double>(gpu, gl, 1), std::vector<double>{42});
  EXPECT_EQ(from_gpu<double>(gpu, gdx, 6), std::vector<double>(6, 42.0));
  const std::vector<double> half = {0.5, 0, 1};
  const DeviceBuffer ghalf = to_gpu(half);
  try {
    InfogainLossDesc d{DataType::kFloat64, 3, 2, 1, true, -1, LossNormalization::kValid};
    infogain_loss_fwd(gpu, d, gx.get(), ghalf.get(), gx.get(), gl.get());
    ADD_FAILURE() << "no throw";
  } catch (const PrimError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "label 0.500000 at position 0 is not an integer in [0, 2) nor the ignore "
                  "label -1"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace crema::prim
