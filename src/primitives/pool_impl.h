// Internal: pooling's implementation table. Each algorithm of each device is one row: a support
// rule that says why it cannot run a call (nullptr when it can), a preference rule that says why
// kAuto passes it over although it could (a measured loss to a later row; ignored when the row is
// forced), and its launch. pool.cpp walks a device's rows in order; a backend file defines its
// rows, so a new kernel is one file plus one row in pool.cpp's table.
#pragma once

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

struct PoolImpl {
  PoolAlgo algo;
  Device device;
  const char* (*unsupported)(const PoolArgs& a);  // nullptr when the row runs a
  const char* (*slower)(const PoolArgs& a);       // nullptr function: never passed over
  void (*run)(Handle& h, const PoolArgs& a);
};

// The rows each backend defines, in pool.cpp's order of preference.
namespace cpu {
extern const PoolImpl kPoolDisjoint, kPoolDirect;
}
namespace cuda {
extern const PoolImpl kPoolGlobal, kPoolRows, kPoolPlanes, kPoolLanes, kPoolLanesS2, kPoolSweep,
    kPoolWindow;
}

}  // namespace crema::prim
