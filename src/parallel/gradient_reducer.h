// The gradient side of data-parallel training: runs a replica's backward and sums the learnable
// parameters' gradients over the replicas, in buckets of at least bucket_bytes launched as soon
// as the backward has finished every gradient in them (Caffe's layer_wise_reduce). On a GPU the
// sums run on a stream of their own, overlapping the rest of the backward; the compute stream
// waits for them before anything after backward() reads a gradient.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/net.h"
#include "parallel/communicator.h"

namespace crema {

template <typename Dtype>
class GradientReducer {
 public:
  // h: the replica's compute handle. overlap false: one launch after the whole backward.
  GradientReducer(Communicator& comm, Handle& h, size_t bucket_bytes, bool overlap);

  int rank() const { return comm_.rank(); }
  int replicas() const { return comm_.size(); }
  Communicator& communicator() { return comm_; }

  // net.backward(h), with every learnable parameter's gradient replaced by its sum over the
  // replicas. The bucket plan is made at the first call; the net must keep its parameters.
  void backward(Net<Dtype>& net);
  // Copies the root's learnable parameters over the other replicas'.
  void broadcast_params(Net<Dtype>& net);
  // How the gradients were grouped: per bucket, the indices into net.learnable_params().
  const std::vector<std::vector<int>>& buckets() const { return bucket_params_; }

 private:
  void plan(Net<Dtype>& net);
  void launch(int bucket);

  Communicator& comm_;
  Handle& h_;
  size_t bucket_bytes_;
  bool overlap_;
  std::unique_ptr<Handle> comm_h_;  // the summing stream (GPU replicas)
  prim::Event ready_, done_;
  std::vector<std::vector<int>> bucket_params_;
  std::vector<std::vector<CommBuffer>> bucket_buffers_;
  std::vector<int> bucket_ready_;  // the layer whose backward finishes the bucket
};

}  // namespace crema
