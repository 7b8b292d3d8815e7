// Internal: pooling's implementation table (impl_table.h): the call every row sees and the rows
// each backend defines. pool.cpp holds the table.
#pragma once

#include "primitives/common/impl_table.h"
#include "primitives/pool.h"

namespace crema::prim {

enum class PoolPass { kForward, kBackward };

// One call as every row sees it, validated by pool.cpp. Forward reads x and writes out (y);
// backward reads dy (and, for max, x and y) and writes out (dx). Pointers a pass does not read
// may be null.
struct PoolArgs {
  PoolPass pass;
  const PoolDesc& pd;
  const TensorDesc& xd;
  const TensorDesc& yd;
  const void* x;
  const void* y;
  const void* dy;
  void* out;
  Blend blend;

  bool forward() const { return pass == PoolPass::kForward; }
  bool is_max() const { return pd.mode == PoolMode::kMax; }
  // The TensorDesc of out (y forward, dx backward).
  const TensorDesc& out_desc() const { return forward() ? yd : xd; }
};

using PoolImpl = ImplRow<PoolArgs, PoolAlgo>;

// The rows each backend defines, in pool.cpp's order of preference.
namespace cpu {
extern const PoolImpl kPoolDisjoint, kPoolDirect;
}
namespace cuda {
extern const PoolImpl kPoolGlobal, kPoolRows, kPoolPlanes, kPoolLanes, kPoolLanesS2, kPoolSweep,
    kPoolWindow;
}

}  // namespace crema::prim
