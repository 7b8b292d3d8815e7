// Fillers initialize parameter tensors from a FillerParameter, as Caffe defines them:
//   constant(value); uniform(min, max); gaussian(mean, std) -- with sparse = s >= 0 each weight
//   is kept with probability s / num_outputs (shape[0]) and zeroed otherwise;
//   positive_unitball: uniform in [0, 1], each of the shape[0] rows scaled to sum 1;
//   xavier: uniform(-a, a), a = sqrt(3 / n); msra: gaussian(0, sqrt(2 / n)), where
//     n = fan_in (default), fan_out, or their mean by variance_norm, fan_in = count / shape[0],
//     fan_out = count / shape[1];
//   bilinear: the upsampling kernel for Deconvolution (square kernels).
// Values are drawn on the host from thread_rng() and copied to the tensor's device.
#pragma once

#include "core/tensor.h"
#include "crema.pb.h"

namespace crema {

// Throws crema::Error for an unknown filler type or invalid parameters.
template <typename Dtype>
void fill_tensor(const FillerParameter& param, Tensor<Dtype>* tensor);

}  // namespace crema
