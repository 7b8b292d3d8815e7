// Loss primitives: descriptor validation and the one device dispatcher per entry point.
#include "primitives/losses.h"

#include <cmath>
#include <string>

#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (losses_cpu.cpp, losses_cuda.cu), with the public signatures.
CREMA_BACKENDS(void contrastive_loss_fwd(Handle& h, const ContrastiveLossDesc& d, const void* a,
                                         const void* b, const void* similar, void* loss);
               void contrastive_loss_bwd(Handle& h, const ContrastiveLossDesc& d, const void* a,
                                         const void* b, const void* similar, double loss_weight,
                                         void* da, void* db);
               void euclidean_loss_fwd(Handle& h, const EuclideanLossDesc& d, const void* a,
                                       const void* b, void* loss);
               void euclidean_loss_bwd(Handle& h, const EuclideanLossDesc& d, const void* a,
                                       const void* b, double loss_weight, void* da, void* db);
               void hinge_loss_fwd(Handle& h, const HingeLossDesc& d, const void* x,
                                   const void* label, void* loss);
               void hinge_loss_bwd(Handle& h, const HingeLossDesc& d, const void* x,
                                   const void* label, double loss_weight, void* dx);
               void infogain_loss_fwd(Handle& h, const InfogainLossDesc& d, const void* prob,
                                      const void* label, const void* infogain, void* loss);
               void infogain_loss_bwd(Handle& h, const InfogainLossDesc& d, const void* prob,
                                      const void* label, const void* infogain, double loss_weight,
                                      void* dx);
               void multinomial_logistic_loss_fwd(Handle& h, const MultinomialLogisticLossDesc& d,
                                                  const void* prob, const void* label, void* loss);
               void multinomial_logistic_loss_bwd(Handle& h, const MultinomialLogisticLossDesc& d,
                                                  const void* prob, const void* label,
                                                  double loss_weight, void* dx);
               void sigmoid_cross_entropy_loss_fwd(Handle& h, const SigmoidCrossEntropyLossDesc& d,
                                                   const void* x, const void* target, void* loss);
               void sigmoid_cross_entropy_loss_bwd(Handle& h, const SigmoidCrossEntropyLossDesc& d,
                                                   const void* x, const void* target,
                                                   double loss_weight, void* dx);)

namespace {

[[noreturn]] void fail(const std::string& why) { throw PrimError(why); }

// Every loss needs at least one sample with at least one value: the normalizers divide by N.
void check_sizes(const char* op, int64_t num, int64_t dim) {
  if (num < 1 || dim < 1)
    fail(std::string(op) + ": empty input (num " + std::to_string(num) + ", dim " +
         std::to_string(dim) + ")");
}

void check_ptrs(const char* op, bool ok) {
  if (!ok) fail(std::string(op) + ": null data pointer");
}

}  // namespace

void contrastive_loss_fwd(Handle& h, const ContrastiveLossDesc& d, const void* a, const void* b,
                          const void* similar, void* loss) {
  const char* op = "contrastive_loss_fwd";
  check_sizes(op, d.num, d.dim);
  if (!std::isfinite(d.margin)) fail(std::string(op) + ": margin must be finite");
  check_ptrs(op, a && b && similar && loss);
  CREMA_DISPATCH(h, contrastive_loss_fwd, h, d, a, b, similar, loss);
}

void contrastive_loss_bwd(Handle& h, const ContrastiveLossDesc& d, const void* a, const void* b,
                          const void* similar, double loss_weight, void* da, void* db) {
  const char* op = "contrastive_loss_bwd";
  check_sizes(op, d.num, d.dim);
  if (!std::isfinite(d.margin)) fail(std::string(op) + ": margin must be finite");
  check_ptrs(op, a && b && similar);
  if (!da && !db) return;
  CREMA_DISPATCH(h, contrastive_loss_bwd, h, d, a, b, similar, loss_weight, da, db);
}

void euclidean_loss_fwd(Handle& h, const EuclideanLossDesc& d, const void* a, const void* b,
                        void* loss) {
  const char* op = "euclidean_loss_fwd";
  check_sizes(op, d.num, d.dim);
  check_ptrs(op, a && b && loss);
  CREMA_DISPATCH(h, euclidean_loss_fwd, h, d, a, b, loss);
}

void euclidean_loss_bwd(Handle& h, const EuclideanLossDesc& d, const void* a, const void* b,
                        double loss_weight, void* da, void* db) {
  const char* op = "euclidean_loss_bwd";
  check_sizes(op, d.num, d.dim);
  check_ptrs(op, a && b);
  if (!da && !db) return;
  CREMA_DISPATCH(h, euclidean_loss_bwd, h, d, a, b, loss_weight, da, db);
}

void hinge_loss_fwd(Handle& h, const HingeLossDesc& d, const void* x, const void* label,
                    void* loss) {
  const char* op = "hinge_loss_fwd";
  check_sizes(op, d.num, d.dim);
  if (d.norm != HingeNorm::kL1 && d.norm != HingeNorm::kL2) fail(std::string(op) + ": bad norm");
  check_ptrs(op, x && label && loss);
  CREMA_DISPATCH(h, hinge_loss_fwd, h, d, x, label, loss);
}

void hinge_loss_bwd(Handle& h, const HingeLossDesc& d, const void* x, const void* label,
                    double loss_weight, void* dx) {
  const char* op = "hinge_loss_bwd";
  check_sizes(op, d.num, d.dim);
  if (d.norm != HingeNorm::kL1 && d.norm != HingeNorm::kL2) fail(std::string(op) + ": bad norm");
  check_ptrs(op, x && label && dx);
  CREMA_DISPATCH(h, hinge_loss_bwd, h, d, x, label, loss_weight, dx);
}

void infogain_loss_fwd(Handle& h, const InfogainLossDesc& d, const void* prob, const void* label,
                       const void* infogain, void* loss) {
  const char* op = "infogain_loss_fwd";
  check_sizes(op, d.outer * d.inner, d.channels);
  check_ptrs(op, prob && label && infogain && loss);
  CREMA_DISPATCH(h, infogain_loss_fwd, h, d, prob, label, infogain, loss);
}

void infogain_loss_bwd(Handle& h, const InfogainLossDesc& d, const void* prob, const void* label,
                       const void* infogain, double loss_weight, void* dx) {
  const char* op = "infogain_loss_bwd";
  check_sizes(op, d.outer * d.inner, d.channels);
  check_ptrs(op, prob && label && infogain && dx);
  CREMA_DISPATCH(h, infogain_loss_bwd, h, d, prob, label, infogain, loss_weight, dx);
}

void multinomial_logistic_loss_fwd(Handle& h, const MultinomialLogisticLossDesc& d,
                                   const void* prob, const void* label, void* loss) {
  const char* op = "multinomial_logistic_loss_fwd";
  check_sizes(op, d.num, d.dim);
  check_ptrs(op, prob && label && loss);
  CREMA_DISPATCH(h, multinomial_logistic_loss_fwd, h, d, prob, label, loss);
}

void multinomial_logistic_loss_bwd(Handle& h, const MultinomialLogisticLossDesc& d,
                                   const void* prob, const void* label, double loss_weight,
                                   void* dx) {
  const char* op = "multinomial_logistic_loss_bwd";
  check_sizes(op, d.num, d.dim);
  check_ptrs(op, prob && label && dx);
  CREMA_DISPATCH(h, multinomial_logistic_loss_bwd, h, d, prob, label, loss_weight, dx);
}

void sigmoid_cross_entropy_loss_fwd(Handle& h, const SigmoidCrossEntropyLossDesc& d, const void* x,
                                    const void* target, void* loss) {
  const char* op = "sigmoid_cross_entropy_loss_fwd";
  check_sizes(op, d.num, d.dim);
  check_ptrs(op, x && target && loss);
  CREMA_DISPATCH(h, sigmoid_cross_entropy_loss_fwd, h, d, x, target, loss);
}

void sigmoid_cross_entropy_loss_bwd(Handle& h, const SigmoidCrossEntropyLossDesc& d, const void* x,
                                    const void* target, double loss_weight, void* dx) {
  const char* op = "sigmoid_cross_entropy_loss_bwd";
  check_sizes(op, d.num, d.dim);
  check_ptrs(op, x && target && dx);
  CREMA_DISPATCH(h, sigmoid_cross_entropy_loss_bwd, h, d, x, target, loss_weight, dx);
}

}  // namespace crema::prim
