// Which activations a mixed-precision net stores in half size (bf16, f16). A blob is stored in
// the half type its producer's forward_type and backward_type both name when every layer that
// reads or writes it can store it so and no loss weight sits on it; a layer that needs one type
// for all its bottoms and tops (element-wise layers) turns them all to f32 where they would
// differ, until that holds everywhere. Layers with their own type per tensor (convolution) sit at
// the edges of the half-size regions and convert there.
#pragma once

#include <cstddef>
#include <vector>

#include "primitives/types.h"

namespace crema {

// What a layer can store its bottoms and tops in (Layer::half_storage). kNone: its Dtype only.
// kUniform: any one storage type for all of them. kMixed: each its own.
enum class HalfStorage { kNone, kUniform, kMixed };

struct StorageLayer {
  HalfStorage support = HalfStorage::kNone;
  prim::DataType half = prim::DataType::kFloat32;  // bf16 / f16 where both types ask for it
  std::vector<int> bottoms, tops;                  // blob ids
};

// Each blob's storage type, over blob ids [0, num_blobs). f32 for blobs marked `keep_f32`
// (loss outputs, inputs a caller fills).
std::vector<prim::DataType> plan_storage(const std::vector<StorageLayer>& layers,
                                         const std::vector<bool>& keep_f32);

}  // namespace crema
