// Precision of a net, written as NVIDIA Caffe writes it: each layer has a storage type and a
// math type for forward and backward (LayerParameter forward_type, backward_type, forward_math,
// backward_math), defaulting to the net's default_* fields. crema applies the math to the
// layers whose arithmetic is GEMM (Convolution, Deconvolution, InnerProduct) as the primitives'
// MathMode: FLOAT and DOUBLE are strict, FLOAT16 and BFLOAT16 allow tensor cores in that format,
// and math left unset everywhere is the device's default: TF32 on a GPU (as cuDNN and PyTorch
// default for convolution; GPUs without TF32 compute fp32), strict on the CPU.
#pragma once

#include <string>

#include "crema.pb.h"
#include "primitives/types.h"

namespace crema {

// Fills the precision fields a layer leaves unset from the net's defaults: math from
// default_*_math, else from default_*_type where that is set (NVIDIA Caffe's rule); types from
// default_*_type. Fields unset in both stay unset. Throws crema::Error naming the layer when a
// math type is not a float type (INT, UINT, BOOL).
void resolve_layer_precision(const NetParameter& net, LayerParameter* layer);

// The math mode of a layer's forward or backward on a device, after resolve_layer_precision.
prim::MathMode layer_forward_math(const LayerParameter& layer, prim::Device device);
prim::MathMode layer_backward_math(const LayerParameter& layer, prim::Device device);

// Whether a layer asks for half-precision storage (FLOAT16, BFLOAT16) of its activations or
// gradients. On a GPU the Net stores them so where the layers allow (storage_plan.h) and logs the
// layers that asked and store f32; the CPU stores f32.
bool layer_wants_half_storage(const LayerParameter& layer);

// `--precision=fp32|tf32|bf16|fp16` over a net's own fields: fp32 makes every layer's math
// strict, tf32 clears every precision field (the device default), bf16 and fp16 set the net's
// default types and math to BFLOAT16 / FLOAT16 and drop the layers' own (half-size activations
// where the layers allow, storage_plan.h); fp16 also turns on adaptive loss scaling where the
// net sets no scaling of its own. Throws crema::Error for any other value.
void apply_precision_flag(const std::string& precision, NetParameter* net);
// The same over every net a solver builds: net files are read and inlined (net -> net_param,
// train_net -> train_net_param, test_net -> test_net_param, in the order the solver uses them).
void apply_precision_flag(const std::string& precision, SolverParameter* solver);

}  // namespace crema
