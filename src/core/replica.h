// The calling thread's place among the replicas of data-parallel training (Caffe's solver_rank
// and solver_count): each replica trains its own copy of the net on its own thread (or process),
// and a training data layer built on that thread keeps only its share of the records.
#pragma once

namespace crema {

struct Replica {
  int rank = 0;   // 0 is the root: it tests, displays and snapshots
  int count = 1;  // replicas in the run
};

// The calling thread's replica; {0, 1} unless set.
Replica this_replica();
void set_this_replica(Replica replica);

}  // namespace crema
