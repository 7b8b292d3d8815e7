// Per-thread replica identity.
#include "core/replica.h"

namespace crema {
namespace {

thread_local Replica t_replica;

}  // namespace

Replica this_replica() { return t_replica; }

void set_this_replica(Replica replica) { t_replica = replica; }

}  // namespace crema
