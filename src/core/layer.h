// Layer: the unit a Net is built from, with Caffe's lifecycle and vocabulary. A layer reads its
// bottom tensors and writes its top tensors; learnable parameters are its blobs. Each layer has
// ONE forward and ONE backward, which compute by calling primitives through the Handle, so the
// same code runs on the CPU and on CUDA.
//
// Lifecycle: setup() checks the bottom/top counts, calls layer_setup() once (read parameters,
// create and fill blobs), then reshape() (size the tops from the bottoms; called again whenever
// input shapes change), and records loss weights. Loss layers output a scalar; the Net weighs
// it with loss_weight, which it stores in the top's diff as Caffe does, so backward reads the
// loss weight from top[i]->diff()[0] (through top_loss_weight(), which skips that device read
// where the Net has handed the layer the value).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer_place.h"
#include "core/storage_plan.h"
#include "core/tensor.h"
#include "crema.pb.h"
#include "primitives/handle.h"

namespace crema {

using prim::Handle;

// What the memory plan of a net (Net::share_activation_memory, share_inference_memory) may
// assume about the data of a layer's bottoms and tops. kForward: forward reads the bottom, or
// writes every value of the top, and backward never reads it; kBackward: backward reads it too.
// kUnknown, the default, keeps the blob out of the plan. Where a primitive's backward takes data
// it may not need (pooling, element-wise sums, activations), the layer passes null for what it
// declares kForward, so that a wrong declaration fails loudly.
enum class DataUse { kUnknown, kForward, kBackward };

// How many bottoms (or tops) a layer type takes: from min to max (kAny: no upper bound).
struct BlobCount {
  static constexpr int kAny = -1;
  int min = 0;
  int max = kAny;
};
constexpr BlobCount exactly(int n) { return {n, n}; }
constexpr BlobCount at_least(int n) { return {n, BlobCount::kAny}; }
constexpr BlobCount between(int min, int max) { return {min, max}; }

// A layer type's name and the bottom and top counts it takes, which setup() checks before
// layer_setup (Caffe's type() with ExactNumBottomBlobs, MinTopBlobs and their kin, as one value).
struct LayerSignature {
  const char* type;
  BlobCount bottoms;
  BlobCount tops;
  bool tops_match_bottoms = false;  // as many tops as bottoms (Convolution: one per bottom)
};

template <typename Dtype>
class Layer {
 public:
  using Tensors = std::vector<Tensor<Dtype>*>;

  // The Net sets param.phase() before constructing. Tensors the layer creates live on device.
  Layer(const LayerParameter& param, Device device) : param_(param), device_(device) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // Checks counts, layer_setup(), reshape(). Throws crema::Error naming the layer on bad input.
  void setup(const Tensors& bottom, const Tensors& top);

  // Reads parameters and creates blobs; bottoms are already shaped. Called once.
  virtual void layer_setup(const Tensors& bottom, const Tensors& top) {
    (void)bottom;
    (void)top;
  }
  // Shapes the tops (and internal buffers) from the bottoms.
  virtual void reshape(const Tensors& bottom, const Tensors& top) = 0;
  virtual void forward(Handle& h, const Tensors& bottom, const Tensors& top) = 0;
  // Writes bottom diffs where propagate_down[i], and accumulates nothing: parameter diffs are
  // accumulated (beta = 1) because the solver zeroes them once per iteration (iter_size).
  virtual void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                        const Tensors& bottom) = 0;

  virtual LayerSignature signature() const = 0;
  const char* type() const { return signature().type; }
  // Layers that make a missing top themselves (loss layers get an unnamed loss top).
  virtual bool auto_top_blobs() const { return false; }
  // False for inputs a layer can never propagate to (e.g. labels).
  virtual bool allow_force_backward(int bottom_index) const {
    (void)bottom_index;
    return true;
  }
  // Loss layers default to loss_weight 1 on top 0.
  virtual bool is_loss() const { return false; }
  // A copy of top j's values as forward left them that this layer keeps until its own backward
  // (BatchNorm in training keeps its normalized output), or nullptr. The Net offers it to an
  // in-place layer that follows and must keep its input for backward (use_kept_bottom).
  virtual const Tensor<Dtype>* kept_top(int j) const {
    (void)j;
    return nullptr;
  }
  // Offers `kept`, holding bottom j's values as forward receives them until this layer's
  // backward; returns whether the layer uses it instead of a copy of its own.
  virtual bool use_kept_bottom(int j, const Tensor<Dtype>* kept) {
    (void)j;
    (void)kept;
    return false;
  }

  // Fusion. The Net offers each layer, in order, the in-place layer that follows it on one of
  // its tops (next's bottoms and tops are that one blob); a layer that can do next's forward and
  // backward inside its own (BatchNorm takes a per-channel Scale and a ReLU: one pass over the
  // data instead of three) records it and returns true, and the Net then skips next's forward
  // and backward. backward says whether the net will run backward through the pair.
  // release_absorbed() returns the layer to doing its own work only (a forward or backward over
  // part of the net that would split the group).
  virtual bool absorb(Layer<Dtype>& next, bool backward) {
    (void)next;
    (void)backward;
    return false;
  }
  virtual void release_absorbed() {}

  // Half-size storage of bottoms and tops in mixed-precision nets on a GPU (storage_plan.h says
  // how the Net decides). A layer that returns kUniform or kMixed passes its tensors' raw
  // pointers and desc() types to primitives that take bf16 and f16 on CUDA.
  virtual StorageSupport half_storage() const { return StorageSupport::kNone; }
  // Channels-last (NHWC) storage of 4-d bottoms and tops on a GPU, where the net asks for it
  // (Net::set_channels_last; storage_plan.h). A layer that returns kUniform or kMixed, after its
  // reshape, passes its tensors' desc() (which then has NHWC strides) or layout-free views to
  // primitives that take them.
  virtual StorageSupport channels_last() const { return StorageSupport::kNone; }
  // Why a CUDA graph may not record this layer's forward and backward once and replay them
  // (prim::StreamGraph), or nullptr when it may: replayed work must be the same work with the
  // same arguments at every step of unchanged shapes, and must never wait for the GPU. (A layer
  // that waits and does not say so is caught while recording, at the price of a failed CUDA call.)
  virtual const char* not_replayable() const { return nullptr; }

  // A layer that reads a data source: where it stands after the last batch its forward handed
  // out (records passed, its random generator), which snapshots keep, and the way back there,
  // which throws crema::Error naming the layer when the state cannot be used. Other layers have
  // no such state: reader_state returns false.
  virtual bool reader_state(DataReaderState* state) const {
    (void)state;
    return false;
  }
  virtual void restore_reader_state(const DataReaderState& state) { (void)state; }

  // What forward and backward do with bottom i's and top j's data (DataUse above).
  virtual DataUse bottom_data_use(int i) const {
    (void)i;
    return DataUse::kUnknown;
  }
  virtual DataUse top_data_use(int j) const {
    (void)j;
    return DataUse::kUnknown;
  }
  // The bottom whose data (or diff) top j shares at every reshape, or -1: the plan gives the two
  // one buffer (Split's tops share data; Flatten's and Reshape's share data and diff).
  virtual int data_view_of(int j) const {
    (void)j;
    return -1;
  }
  virtual int diff_view_of(int j) const {
    (void)j;
    return -1;
  }

  const LayerParameter& param() const { return param_; }
  const std::string& name() const { return param_.name(); }
  Phase phase() const { return param_.phase(); }
  Device device() const { return device_; }

  std::vector<std::shared_ptr<Tensor<Dtype>>>& blobs() { return blobs_; }
  // Whether each blob's gradient is computed (false for lr_mult 0 on all uses).
  bool param_propagate_down(int i) const {
    return i < int(param_propagate_down_.size()) && param_propagate_down_[i];
  }
  void set_param_propagate_down(int i, bool value);

  // The loss weight backward applies to top i: Caffe keeps it in the top's diff. Where no other
  // layer reads that top, nothing writes the diff after the Net fills it, so the Net also hands
  // the value over (set_top_loss_weight) and backward needs no device-to-host read, which on a
  // GPU would stall the stream every iteration.
  double top_loss_weight(int i, const Tensor<Dtype>& top) const;
  void set_top_loss_weight(int i, double weight);

  // Throws crema::Error "layer <name> (<type>): <message>".
  template <typename... Parts>
  [[noreturn]] void error(const Parts&... parts) const {
    fail(layer_label(param_, type()), ": ", parts...);
  }
  // Run f and rethrow what it throws as this layer's error, which names the layer: work on the
  // user's input (an axis, a filler, a file) that throws crema::Error, and primitive calls that
  // check user data (labels, indices) and throw prim::PrimError.
  template <typename F>
  void naming_layer(const F& f) const {
    try {
      f();
    } catch (const Error& e) {
      error(e.what());
    }
  }
  template <typename F>
  void naming_layer_prim(const F& f) const {
    try {
      f();
    } catch (const prim::PrimError& e) {
      error(e.what());
    }
  }

 protected:
  LayerParameter param_;
  Device device_;
  std::vector<std::shared_ptr<Tensor<Dtype>>> blobs_;
  std::vector<bool> param_propagate_down_;

  // Replaces the blobs with a weight of weight_shape filled by weight_filler and, with bias_term,
  // a bias of bias_size values filled by bias_filler (Convolution, Embed). A bad
  // filler or size is this layer's error.
  void make_weight_and_bias(const std::vector<int64_t>& weight_shape,
                            const FillerParameter& weight_filler, bool bias_term, int64_t bias_size,
                            const FillerParameter& bias_filler);

  // Whether backward computes the weight gradients on the handle's side stream (Handle::side)
  // while the data gradient runs on the handle: on a GPU, for a weight gradient of at most 2^28
  // multiply-adds (every layer of LeNet and CIFAR-10 quick, none of the ImageNet nets'), whose
  // kernels each fill only part of the GPU, so the two overlap. A larger one fills the GPU
  // alone, and the side's workspace would only add to the peak memory.
  bool weight_grad_beside(double macs) const {
    return device_ == Device::kCUDA && macs <= double(int64_t(1) << 28);
  }

 private:
  std::vector<std::optional<double>> top_loss_weights_;
  void check_counts(const Tensors& bottom, const Tensors& top) const;
};

}  // namespace crema
