// Loss functions as primitives, with Caffe's definitions. Each forward writes the normalized
// scalar loss into loss[0] (device memory, in the data type); each backward writes (overwrites)
// the gradient of loss_weight * loss. Labels are stored in the data type, as Caffe stores them.
// Data of N samples is viewed as N x D, packed (D = count / N).
//
//   euclidean:     loss = 1/(2N) sum_i (a_i - b_i)^2
//                  da = loss_weight/N * (a - b),  db = -da
//   sigmoid cross entropy (x: logits, t: targets in [0, 1]; stable form):
//                  loss = sum_{valid i} [max(x_i, 0) - x_i t_i + log(1 + exp(-|x_i|))] / norm
//                  dx_i = loss_weight/norm * (sigmoid(x_i) - t_i), 0 where t_i == ignore_label
//   hinge (x: N x D scores, l: N labels; s_nj = -1 if j == l_n else +1):
//                  v_nj = max(0, 1 + s_nj x_nj);  L1: loss = sum v / N;  L2: sum v^2 / N
//                  L1: dx = loss_weight/N * s * [v > 0];  L2: dx = loss_weight/N * 2 s v
//   infogain (p: probabilities outer x C x inner, l: outer*inner labels, H: C x C):
//                  loss = -sum_{valid n} sum_c H[l_n, c] log(max(p_nc, 1e-20)) / norm
//                  given p = softmax(x):  dx_nc = loss_weight/norm * (p_nc sum_c' H[l_n, c']
//                  - H[l_n, c]); ignored positions get 0
//   multinomial logistic (p: N x D probabilities, l: N labels):
//                  loss = -sum_n log(max(p[n, l_n], 1e-20)) / N
//                  dx[n, l_n] = -loss_weight/N / max(p[n, l_n], 1e-20), 0 elsewhere
//   contrastive (a, b: N x D, y: N similarity labels, int(y) != 0 = similar; d_n = |a_n - b_n|):
//                  similar: d_n^2;  dissimilar: max(margin - d_n, 0)^2, or with legacy_version
//                  max(margin - d_n^2, 0);  loss = sum / (2N)
//                  da_n = loss_weight/N * (similar: (a_n - b_n); dissimilar, active:
//                  -(margin - d_n)/(d_n + 1e-4) (a_n - b_n), legacy: -(a_n - b_n)),  db = -da
//                  (the 1e-4 keeps Caffe's guard against d = 0)
// A label outside [0, classes) that is not the ignore label throws PrimError naming it.
#pragma once

#include <cstdint>

#include "primitives/handle.h"
#include "primitives/softmax.h"  // LossNormalization
#include "primitives/types.h"

namespace crema::prim {

// Caffe's kLOG_THRESHOLD: probabilities are clamped to it before the log.
inline constexpr double kLogThreshold = 1e-20;

struct ContrastiveLossDesc {
  DataType dtype = DataType::kFloat32;
  int64_t num = 1, dim = 1;
  double margin = 1.0;
  bool legacy = false;
};
void contrastive_loss_fwd(Handle& h, const ContrastiveLossDesc& d, const void* a, const void* b,
                          const void* similar, void* loss);
// da or db may be nullptr (not needed).
void contrastive_loss_bwd(Handle& h, const ContrastiveLossDesc& d, const void* a, const void* b,
                          const void* similar, double loss_weight, void* da, void* db);

struct EuclideanLossDesc {
  DataType dtype = DataType::kFloat32;
  int64_t num = 1, dim = 1;
};
void euclidean_loss_fwd(Handle& h, const EuclideanLossDesc& d, const void* a, const void* b,
                        void* loss);
// da or db may be nullptr (not needed).
void euclidean_loss_bwd(Handle& h, const EuclideanLossDesc& d, const void* a, const void* b,
                        double loss_weight, void* da, void* db);

enum class HingeNorm { kL1, kL2 };
struct HingeLossDesc {
  DataType dtype = DataType::kFloat32;
  int64_t num = 1, dim = 1;
  HingeNorm norm = HingeNorm::kL1;
};
void hinge_loss_fwd(Handle& h, const HingeLossDesc& d, const void* x, const void* label,
                    void* loss);
void hinge_loss_bwd(Handle& h, const HingeLossDesc& d, const void* x, const void* label,
                    double loss_weight, void* dx);

struct InfogainLossDesc {
  DataType dtype = DataType::kFloat32;
  int64_t outer = 1, channels = 1, inner = 1;
  bool has_ignore_label = false;
  int ignore_label = -1;
  LossNormalization normalization = LossNormalization::kValid;
};
// infogain is the C x C matrix H, row-major (row = true label).
void infogain_loss_fwd(Handle& h, const InfogainLossDesc& d, const void* prob, const void* label,
                       const void* infogain, void* loss);
void infogain_loss_bwd(Handle& h, const InfogainLossDesc& d, const void* prob, const void* label,
                       const void* infogain, double loss_weight, void* dx);

struct MultinomialLogisticLossDesc {
  DataType dtype = DataType::kFloat32;
  int64_t num = 1, dim = 1;
};
void multinomial_logistic_loss_fwd(Handle& h, const MultinomialLogisticLossDesc& d,
                                   const void* prob, const void* label, void* loss);
void multinomial_logistic_loss_bwd(Handle& h, const MultinomialLogisticLossDesc& d,
                                   const void* prob, const void* label, double loss_weight,
                                   void* dx);

// Normalized over num x dim values; `num` is the batch size of BATCH_SIZE normalization.
struct SigmoidCrossEntropyLossDesc {
  DataType dtype = DataType::kFloat32;
  int64_t num = 1, dim = 1;
  bool has_ignore_label = false;
  int ignore_label = -1;
  LossNormalization normalization = LossNormalization::kBatchSize;
};
void sigmoid_cross_entropy_loss_fwd(Handle& h, const SigmoidCrossEntropyLossDesc& d, const void* x,
                                    const void* target, void* loss);
void sigmoid_cross_entropy_loss_bwd(Handle& h, const SigmoidCrossEntropyLossDesc& d, const void* x,
                                    const void* target, double loss_weight, void* dx);

}  // namespace crema::prim
