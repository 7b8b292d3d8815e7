// How a net stores its activations on a GPU: which are half size (bf16, f16) in a mixed-precision
// net, and which are channels last (NHWC) where the net asks for that layout.
//
// Half size: a blob is stored in the half type its producer's forward_type and backward_type both
// name when every layer that reads or writes it can store it so and no loss weight sits on it.
// Channels last: a 4-d blob with more than one value per channel of an image is stored NHWC when
// every layer that reads or writes it can take it so. In both plans a layer that needs one form
// for all its bottoms and tops (element-wise layers) turns them all back to the default (f32,
// NCHW) where they would differ, until that holds everywhere; layers with their own form per
// tensor (convolution) sit at the edges of the regions and convert there.
#pragma once

#include <cstddef>
#include <vector>

#include "primitives/types.h"

namespace crema {

// What a layer can store its bottoms and tops in, beyond the default (Layer::half_storage,
// Layer::channels_last). kNone: the default only. kUniform: any one form for all of them.
// kMixed: each its own.
enum class StorageSupport { kNone, kUniform, kMixed };

struct StorageLayer {
  StorageSupport support = StorageSupport::kNone;
  prim::DataType half = prim::DataType::kFloat32;  // bf16 / f16 where both types ask for it
  std::vector<int> bottoms, tops;                  // blob ids
};

// Each blob's storage type, over blob ids [0, num_blobs). f32 for blobs marked `keep_f32`
// (loss outputs, inputs a caller fills).
std::vector<prim::DataType> plan_storage(const std::vector<StorageLayer>& layers,
                                         const std::vector<bool>& keep_f32);

// Which blobs are stored channels last, over blob ids [0, candidates.size()): candidates (4-d
// blobs with planes larger than 1x1) that every layer touching them can take so. `half` of the
// layers is not read.
std::vector<bool> plan_channels_last(const std::vector<StorageLayer>& layers,
                                     const std::vector<bool>& candidates);

}  // namespace crema
