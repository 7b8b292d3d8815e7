// Softmax over one axis and the losses and metrics built on it. Data is viewed as
// (outer, channels, inner), packed, softmax taken over channels for each (outer, inner).
//
//   softmax:     y_c = exp(x_c - max) / sum_j exp(x_j - max)
//                dx_c = y_c * (dy_c - sum_j dy_j * y_j)
//   log-softmax: y_c = x_c - max - log sum_j exp(x_j - max)
//                dx_c = dy_c - exp(y_c) * sum_j dy_j
//   softmax loss (given prob = softmax(x) and labels, one per (outer, inner), stored in the
//   data type as Caffe stores them):
//                loss = -sum_valid log(max(prob[label], FLT_MIN)) / normalizer
//                dx   = loss_weight / normalizer * (prob - onehot(label)), 0 where ignored
//   accuracy:    fraction of valid positions whose label is among the top_k scores; another
//                class scoring equal to the label counts against it, as in Caffe.
//
// Softmax's kernels form an implementation table (impl_table.h; docs/primitives.md lists the
// rows): SoftmaxDesc::algo kAuto takes the first row that runs the call and is not known to be
// slower on it (CREMA_VERBOSE=1 logs the choice); another value forces its row, and a row that
// cannot run the call throws PrimError saying why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

enum class SoftmaxAlgo {
  kAuto,
  kRows,       // cpu: inner 1, a row of contiguous channels at a time
  kWarpRows,   // cuda: inner 1, a warp per row of at most 1024 channels
  kBlockRows,  // cuda: inner 1, a block per row
  kSpatial,    // cpu, cuda: any inner, a running value per (outer, inner) position
};

struct SoftmaxDesc {
  DataType dtype = DataType::kFloat32;
  int64_t outer = 1, channels = 1, inner = 1;
  bool log = false;
  SoftmaxAlgo algo = SoftmaxAlgo::kAuto;
};

void softmax_fwd(Handle& h, const SoftmaxDesc& sd, const void* x, void* y, Blend blend = {});
void softmax_bwd(Handle& h, const SoftmaxDesc& sd, const void* y, const void* dy, void* dx,
                 Blend blend = {});

// "auto", "rows", "warp_rows", "block_rows", "spatial"; softmax_algo_of is the inverse and throws
// PrimError for any other name. softmax_algos lists a device's rows in kAuto's order.
const char* softmax_algo_name(SoftmaxAlgo a);
SoftmaxAlgo softmax_algo_of(const std::string& name);
std::vector<SoftmaxAlgo> softmax_algos(Device device);
// With the arguments of the call: nullptr where sd.algo runs it (kAuto always does), else why not.
const char* softmax_fwd_unsupported(Handle& h, const SoftmaxDesc& sd, const void* x, const void* y,
                                    Blend blend = {});
const char* softmax_bwd_unsupported(Handle& h, const SoftmaxDesc& sd, const void* y, const void* dy,
                                    const void* dx, Blend blend = {});

// Caffe's LossParameter.NormalizationMode.
enum class LossNormalization { kFull, kValid, kBatchSize, kNone };

struct SoftmaxLossDesc {
  DataType dtype = DataType::kFloat32;
  int64_t outer = 1, channels = 1, inner = 1;
  bool has_ignore_label = false;
  int ignore_label = -1;
  LossNormalization normalization = LossNormalization::kValid;
};

// Writes the normalized loss into loss[0] (device memory, dtype). A label outside
// [0, channels) that is not the ignore label throws PrimError.
void softmax_loss_fwd(Handle& h, const SoftmaxLossDesc& ld, const void* prob, const void* label,
                      void* loss);
// dx = loss_weight / normalizer * (prob - onehot(label)); ignored positions get 0.
void softmax_loss_bwd(Handle& h, const SoftmaxLossDesc& ld, const void* prob, const void* label,
                      double loss_weight, void* dx);

struct AccuracyDesc {
  DataType dtype = DataType::kFloat32;
  int64_t outer = 1, channels = 1, inner = 1;
  int top_k = 1;
  bool has_ignore_label = false;
  int ignore_label = -1;
};

// accuracy[0] = correct / valid (0 when nothing is valid). per_class (channels values, or
// nullptr) gets each class's accuracy over the positions labelled with it.
void accuracy_fwd(Handle& h, const AccuracyDesc& ad, const void* scores, const void* label,
                  void* accuracy, void* per_class);

}  // namespace crema::prim
