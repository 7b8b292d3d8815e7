// Dropout: descriptor validation and the one device dispatcher.
#include "primitives/dropout.h"

#include <string>

#include "primitives/common/dispatch.h"

namespace crema::prim {

// The implementations (dropout_cpu.cpp, dropout_cuda.cu), with the public signatures.
CREMA_BACKENDS(void dropout_fwd(Handle& h, const DropoutDesc& dd, const void* x, void* y,
                                uint8_t* mask);
               void dropout_bwd(Handle& h, const DropoutDesc& dd, const void* dy,
                                const uint8_t* mask, void* dx);)

namespace {

void check(const char* op, const DropoutDesc& dd) {
  if (dd.count < 0) throw PrimError(std::string(op) + ": negative count");
  // Written so that NaN fails too; ratio 1 would drop everything and scale by infinity.
  if (!(dd.ratio >= 0.0 && dd.ratio < 1.0))
    throw PrimError(std::string(op) + ": dropout ratio " + std::to_string(dd.ratio) +
                    " is not in [0, 1)");
}

}  // namespace

void dropout_fwd(Handle& h, const DropoutDesc& dd, const void* x, void* y, uint8_t* mask) {
  check("dropout_fwd", dd);
  if (dd.count == 0) return;
  if (!x || !y || !mask) throw PrimError("dropout_fwd: null data pointer");
  CREMA_DISPATCH(h, dropout_fwd, h, dd, x, y, mask);
}

void dropout_bwd(Handle& h, const DropoutDesc& dd, const void* dy, const uint8_t* mask, void* dx) {
  check("dropout_bwd", dd);
  if (dd.count == 0) return;
  if (!dy || !mask || !dx) throw PrimError("dropout_bwd: null data pointer");
  CREMA_DISPATCH(h, dropout_bwd, h, dd, dy, mask, dx);
}

}  // namespace crema::prim
