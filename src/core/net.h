// Net: a directed acyclic graph of layers built from a NetParameter, as Caffe's Net. Building
// upgrades nothing (the loaders do that), filters layers by the NetState, inserts Splits, wires
// bottoms to tops by name (a top named like its bottom is computed in place), infers shapes
// once, decides which layers need backward, and collects the learnable parameters with their
// lr_mult/decay_mult (parameters sharing a ParamSpec name share memory).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/layer.h"
#include "core/tensor.h"
#include "crema.pb.h"

namespace crema {

// Makes the layer a LayerParameter describes; throws crema::Error for an unknown type. The Net
// knows layer types only through it: core never depends on src/layers.
template <typename Dtype>
using LayerFactory = std::unique_ptr<Layer<Dtype>> (*)(const LayerParameter& param, Device device);

// What copying trained weights into a net did, by layer name: the layers whose weights it
// copied, the source's layers with weights that match no layer of the net, and the net's layers
// with parameters that the source did not fill (they keep their fillers).
struct WeightsCopy {
  std::vector<std::string> copied, ignored, unfilled;
};

// The rule for weights a user names (--weights, a solver's weights, a snapshot's): copying no
// layer is an error naming the file, and a partial match is one warning with the counts.
void require_weights_copied(const WeightsCopy& copy, const std::string& file);

template <typename Dtype>
class Net {
 public:
  using TensorPtr = std::shared_ptr<Tensor<Dtype>>;

  // Uses param.state() for the include/exclude rules and make_layer for each layer. Throws
  // crema::Error on bad input.
  Net(const NetParameter& param, Device device, LayerFactory<Dtype> make_layer);
  // Same, with the state's phase replaced.
  Net(const NetParameter& param, Phase phase, Device device, LayerFactory<Dtype> make_layer);
  // The same two with crema's layer registry as the factory (defined with the registry in
  // layers/layer_registry.cpp).
  Net(const NetParameter& param, Device device);
  Net(const NetParameter& param, Phase phase, Device device);

  // Runs every layer's forward and returns the weighted sum of the losses.
  Dtype forward(Handle& h);
  // Fills the tops of Input layers with uniform values in [-1, 1) from the seed: benchmarks run
  // on random data, never zeros (max pooling and GEMMs are faster on zeros).
  void fill_inputs_uniform(uint32_t seed);
  Dtype forward_range(Handle& h, int start, int end);
  // forward_range without waiting: the weighted sum of the range's losses is left on the
  // device (loss_on_device), so nothing waits for the GPU and a CUDA graph can record it.
  // read_loss waits for it. On the CPU the sum is in host memory and ready at once. With
  // sum_loss false the losses are not summed and loss_on_device keeps its value.
  void queue_forward_range(Handle& h, int start, int end, bool sum_loss = true);
  const double* loss_on_device() const { return static_cast<const double*>(loss_sum_.get()); }
  Dtype read_loss(Handle& h);
  // Waits for the work queued on h; an error a kernel recorded there (a bad label found on the
  // GPU, prim::DeferredError) is raised as the error of the layer that queued it.
  void wait(Handle& h) const;
  // Zeroes the learnable parameters' diffs, which backward accumulates into (Caffe's
  // ClearParamDiffs).
  void clear_param_diffs(Handle& h);
  // Backward through the layers that need it, from the last to the first.
  void backward(Handle& h);
  void backward_range(Handle& h, int start, int end);
  // Re-runs every layer's reshape (after an input shape changed).
  void reshape();
  // Fusion (Layer::absorb): at construction each layer may take on the in-place layers right
  // after it (BatchNorm a Scale and a ReLU); forward and backward then skip those. A range that
  // would split such a group runs its layers apart from then on, as unfuse() does for all.
  // absorbed_by(i): the layer that runs layer i, or -1; group_end(i): the last layer of the group
  // that layer i heads (i when it heads none).
  int absorbed_by(int i) const { return absorbed_by_[size_t(i)]; }
  int group_end(int i) const;
  void unfuse();
  // Stores 4-d activations channels last (NHWC) on a GPU where every layer that reads or writes
  // them can take them so (storage_plan.h), or all NCHW again (on false, and on a CPU); before
  // the first forward: the layers reshape to the new layouts, values are not reordered. Returns
  // how many activations are channels last.
  int set_channels_last(bool on);
  // Places activations in one arena where those whose values are never needed at the same time
  // share bytes, data and gradients alike: an activation's data lives until the last forward or
  // backward that reads it (as its layers declare, Layer::bottom_data_use), its gradient from the
  // backward of the layer that writes it to the backward of the layer that reads it. After a step,
  // only the net's inputs, outputs and losses (data and diffs) are sure to keep their values; the
  // parameters are not touched. The Solver calls this on its training net. Throws crema::Error when
  // the arena cannot be allocated.
  void share_activation_memory();
  // The same for a net that only runs forward (the Solver's test nets, `crema test`): data live
  // until their last forward read, gradients are left alone. A backward is then undefined, and
  // layers fuse as they can without one (BatchNorm with stored statistics takes its Scale and
  // ReLU).
  void share_inference_memory();
  // Gives every activation that the two above placed in the arena its own memory again (zeroed):
  // a caller that reads any blob after a forward or backward (the Python module's net.blobs)
  // needs every value kept, as in Caffe.
  void own_activation_memory();

  // Loads weights by layer name from a trained net (.caffemodel); layers absent from the source
  // keep their initialization. A blob count or shape mismatch, or a value that is not finite,
  // throws. Says which layers it copied, ignored and left unfilled.
  WeightsCopy copy_trained_layers_from(const NetParameter& trained);
  // Makes this net's parameters the same memory as other's (test nets of a solver).
  void share_trained_layers_with(const Net& other);
  // Writes the net definition with every layer's blobs (a .caffemodel).
  void to_proto(NetParameter* param, bool write_diff = false) const;

  const std::string& name() const { return name_; }
  Phase phase() const { return phase_; }
  Device device() const { return device_; }
  int num_layers() const { return int(layers_.size()); }
  const std::vector<std::unique_ptr<Layer<Dtype>>>& layers() const { return layers_; }
  const std::vector<std::string>& layer_names() const { return layer_names_; }
  const std::vector<TensorPtr>& blobs() const { return blobs_; }
  const std::vector<std::string>& blob_names() const { return blob_names_; }
  const std::vector<std::vector<Tensor<Dtype>*>>& bottom_vecs() const { return bottom_vecs_; }
  const std::vector<std::vector<Tensor<Dtype>*>>& top_vecs() const { return top_vecs_; }
  const std::vector<bool>& layer_need_backward() const { return layer_need_backward_; }
  bool has_blob(const std::string& name) const { return blob_index_.count(name) > 0; }
  // Throws crema::Error for an unknown name.
  TensorPtr blob_by_name(const std::string& name) const;
  Layer<Dtype>* layer_by_name(const std::string& name) const;
  // Tops that no layer consumes: the net's outputs (losses, accuracies).
  const std::vector<Tensor<Dtype>*>& output_blobs() const { return output_blobs_; }
  const std::vector<std::string>& output_blob_names() const { return output_names_; }
  // Loss weight of each output blob (0 for non-losses).
  const std::vector<Dtype>& output_loss_weights() const { return output_weights_; }
  // Loss scaling for half-precision gradients: backward starts from scale times each loss
  // weight, so every gradient comes out multiplied by scale (the solver divides it back);
  // forward still returns the unscaled loss. The new weights are queued on h's stream.
  void set_loss_scale(Handle& h, double scale);
  // Throws crema::Error when set_loss_scale would refuse the scale (not positive and finite, or
  // times a loss weight past the gradients' type).
  void check_loss_scale(double scale) const;
  double loss_scale() const { return loss_scale_; }

  // Every parameter blob; learnable_params holds only the owners of shared parameters, with
  // their lr_mult and decay_mult.
  const std::vector<TensorPtr>& params() const { return params_; }
  const std::vector<Tensor<Dtype>*>& learnable_params() const { return learnable_params_; }
  const std::vector<float>& params_lr() const { return params_lr_; }
  // "layer ip, blob 0": where learnable parameter id (an index into learnable_params) is defined.
  std::string learnable_param_label(int id) const;
  const std::vector<float>& params_weight_decay() const { return params_decay_; }
  // Bytes of activations (tops) and of parameters.
  size_t activation_bytes() const;
  size_t param_bytes() const;

 private:
  void init(const NetParameter& param);
  void append_layer(const LayerParameter& lp, int layer_id, std::map<std::string, int>* available);
  void append_params(const LayerParameter& lp, int layer_id);
  void hand_over_loss_weights();
  void decide_backward(const NetParameter& param);
  void link_kept_inputs();
  void fuse_layers(bool backward);
  void plan_half_storage();
  void release_group(int head);
  void keep_groups_whole(int lo, int hi);
  void share_memory(bool backward);

  std::string name_;
  Phase phase_ = TRAIN;
  Device device_;
  LayerFactory<Dtype> make_layer_;
  std::vector<std::unique_ptr<Layer<Dtype>>> layers_;
  std::vector<std::string> layer_names_;
  std::vector<TensorPtr> blobs_;
  std::vector<std::string> blob_names_;
  std::map<std::string, int> blob_index_;
  std::vector<std::vector<Tensor<Dtype>*>> bottom_vecs_, top_vecs_;
  std::vector<std::vector<int>> bottom_ids_, top_ids_;
  std::vector<std::vector<bool>> bottom_need_backward_;
  std::vector<bool> layer_need_backward_;
  std::vector<bool> blob_need_backward_;
  std::vector<int> absorbed_by_;
  std::vector<Dtype> blob_loss_weights_;
  double loss_scale_ = 1.0;
  prim::DeviceBuffer loss_sum_;  // one double on the net's device: the forward's loss
  std::vector<double, prim::PinnedAllocator<double>> loss_host_;
  std::vector<Tensor<Dtype>*> output_blobs_;
  std::vector<std::string> output_names_;
  std::vector<Dtype> output_weights_;
  std::vector<TensorPtr> params_;
  std::vector<Tensor<Dtype>*> learnable_params_;
  std::vector<float> params_lr_, params_decay_;
  std::vector<int> param_owners_;  // -1 for an owner, else the index of the owner in params_
  std::vector<std::pair<int, int>> param_layer_indices_;  // (layer, blob index)
  std::map<std::string, int> param_name_index_;
  // The blobs whose data (false) or diff (true) share_memory placed in its arena.
  std::vector<std::pair<size_t, bool>> arena_placed_;
};

}  // namespace crema
