// Tensor: Caffe's Blob. An N-d array with data and diff (gradient) of the same shape, whose
// memory lives on one device chosen at construction; there are no hidden host/device copies.
// Memory is allocated lazily, zero-filled, on first access, and kept when a reshape shrinks.
// Data and diff are stored as Dtype, or, in a Tensor<float>, in a half-size type (bf16, f16):
// how a mixed-precision net on a GPU stores activations and their gradients (Net decides).
// Typed access (data(), diff()) needs Dtype storage; primitives take the raw pointers with
// desc()'s data type; the host copies (data_vector, set_data, ...) convert.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema {

class BlobProto;
using prim::Device;

// Largest element count a tensor may hold: its bytes, up to 8 per element, fit in int64. The
// bound that matters in practice is memory: reshape also refuses a tensor whose bytes exceed the
// total memory of its device (sizes come from untrusted model files). Kernels index in 64 bits,
// or in 32 bits only below 2^31 elements, where that is faster.
inline constexpr int64_t kMaxTensorElements = std::numeric_limits<int64_t>::max() / 8;

// The product of dims, or -1 when one is negative or the product exceeds kMaxTensorElements;
// computed without overflow, for sizes read from files.
int64_t checked_count(std::initializer_list<int64_t> dims);

// v as a size of a primitive descriptor (TensorDesc holds 32-bit sizes, 64-bit counts and
// strides). Throws crema::Error naming `what` when v is 2^31 or more.
int desc_size(int64_t v, const char* what);

// A packed descriptor of `count` elements of type t, for primitives that see a tensor as a flat
// array (element-wise ops): count split into 32-bit sizes n x c x h x w. Throws crema::Error for
// a count of 2^31 or more with no such split (a prime, or a product of large primes).
prim::TensorDesc flat_desc(prim::DataType t, int64_t count);

template <typename Dtype>
constexpr prim::DataType dtype_of() {
  return sizeof(Dtype) == 8 ? prim::DataType::kFloat64 : prim::DataType::kFloat32;
}

template <typename Dtype>
class Tensor {
 public:
  explicit Tensor(Device device = Device::kCPU) : device_(device) {}
  explicit Tensor(const std::vector<int64_t>& shape, Device device = Device::kCPU);
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  // Throws crema::Error for a negative dimension, more than kMaxTensorElements elements, or more
  // bytes than the device has memory (prim::device_total_bytes).
  void reshape(const std::vector<int64_t>& shape);
  void reshape_like(const Tensor& other) { reshape(other.shape()); }

  const std::vector<int64_t>& shape() const { return shape_; }
  // Size of one axis; a negative axis counts from the end. Throws on an out-of-range axis.
  int64_t shape(int axis) const { return shape_[canonical_axis(axis)]; }
  int num_axes() const { return int(shape_.size()); }
  int64_t count() const { return count_; }
  // Product of the sizes of axes [start, end).
  int64_t count(int start, int end) const;
  int64_t count(int start) const { return count(start, num_axes()); }
  int canonical_axis(int axis) const;

  // Caffe's legacy 4-d accessors: axes beyond the rank read as 1.
  int64_t num() const { return legacy_shape(0); }
  int64_t channels() const { return legacy_shape(1); }
  int64_t height() const { return legacy_shape(2); }
  int64_t width() const { return legacy_shape(3); }
  int64_t offset(int64_t n, int64_t c = 0, int64_t h = 0, int64_t w = 0) const {
    return ((n * channels() + c) * height() + h) * width() + w;
  }

  Device device() const { return device_; }
  // Throw crema::Error unless the storage is Dtype.
  const Dtype* data() const { return static_cast<const Dtype*>(typed(data_)); }
  const Dtype* diff() const { return static_cast<const Dtype*>(typed(diff_)); }
  Dtype* mutable_data() { return static_cast<Dtype*>(typed(data_)); }
  Dtype* mutable_diff() { return static_cast<Dtype*>(typed(diff_)); }
  // The memory in the storage type, for primitives (with desc() or storage()).
  const void* raw_data() const { return memory(data_); }
  const void* raw_diff() const { return memory(diff_); }
  void* mutable_raw_data() { return memory(data_); }
  void* mutable_raw_diff() { return memory(diff_); }

  // The type data and diff are stored in: Dtype unless set_storage chose a half-size type.
  prim::DataType storage() const { return storage_; }
  // Stores data and diff in t from now on: Dtype, or bf16 / f16 for a Tensor<float>; any other
  // type throws crema::Error. A change drops the memory (values are not converted).
  void set_storage(prim::DataType t);

  // Whether data and diff are stored channels last (NHWC over the legacy 4-d view) rather than
  // NCHW: desc() says so to primitives; host copies (data_vector, set_data, BlobProto I/O) stay
  // in NCHW order. A change drops nothing and converts nothing (the Net sets it before use).
  bool channels_last() const { return channels_last_; }
  void set_channels_last(bool on) { channels_last_ = on; }

  // Make this tensor use other's data (or diff) memory: in-place layers, shared parameters. The
  // storage types and layouts must match.
  void share_data(const Tensor& other);
  void share_diff(const Tensor& other);
  // Make this tensor's data (or diff) use buf, a buffer shared by values that are never live at
  // the same time (Net::share_activation_memory); a later reshape past its size gives the tensor
  // its own buffer again.
  void share_data_buffer(std::shared_ptr<prim::DeviceBuffer> buf) { data_ = std::move(buf); }
  void share_diff_buffer(std::shared_ptr<prim::DeviceBuffer> buf) { diff_ = std::move(buf); }
  // The buffers behind data and diff, null before first use: which tensors share memory.
  const prim::DeviceBuffer* data_buffer() const { return data_.get(); }
  const prim::DeviceBuffer* diff_buffer() const { return diff_.get(); }
  // The same buffers, shared: a view of the memory handed out (the Python module's numpy
  // arrays) keeps it alive past a reshape that gives the tensor a new buffer.
  std::shared_ptr<prim::DeviceBuffer> shared_data_buffer() const { return data_; }
  std::shared_ptr<prim::DeviceBuffer> shared_diff_buffer() const { return diff_; }

  // Copy other's data (or diff) into this tensor, converting between storage types and layouts;
  // shapes must match unless reshape is set.
  void copy_from(const Tensor& other, bool copy_diff = false, bool reshape = false);
  // Host copies, for tests, tools and I/O; set_* takes exactly count() values.
  std::vector<Dtype> data_vector() const;
  std::vector<Dtype> diff_vector() const;
  void set_data(const std::vector<Dtype>& values);
  void set_diff(const std::vector<Dtype>& values);
  void fill_data(Dtype value);
  void fill_diff(Dtype value);

  // BlobProto I/O (shape, or legacy num/channels/height/width; data or double_data). from_proto
  // with reshape false requires the stored shape to match and throws crema::Error otherwise.
  void from_proto(const BlobProto& proto, bool reshape = true);
  void to_proto(BlobProto* proto, bool write_diff = false) const;

  // "64 20 24 24 (737280)", as Caffe logs shapes.
  std::string shape_string() const;
  // A packed descriptor of the legacy 4-d view (NCHW, or NHWC where channels_last), of the
  // storage type; rank > 4, or an axis of 2^31 or more (descriptor sizes are 32-bit), throws
  // crema::Error.
  prim::TensorDesc desc() const;
  size_t bytes() const { return size_t(count_) * prim::dtype_size(storage_); }
  // Bytes this tensor allocated itself (shared memory is counted by its owner).
  size_t allocated_bytes() const;

 private:
  int64_t legacy_shape(int axis) const;
  // Allocates (zeroed) on first use and grows when the shape outgrew the buffer.
  void* memory(std::shared_ptr<prim::DeviceBuffer>& buf) const;
  void* typed(std::shared_ptr<prim::DeviceBuffer>& buf) const;
  // Host copies of data or diff as Dtype, and back.
  std::vector<Dtype> host_values(std::shared_ptr<prim::DeviceBuffer>& buf) const;
  void set_host_values(std::shared_ptr<prim::DeviceBuffer>& buf, const std::vector<Dtype>& values);
  // The same values in storage order (set_host_values after the reordering).
  void set_stored_values(std::shared_ptr<prim::DeviceBuffer>& buf,
                         const std::vector<Dtype>& values);
  // v (count_ values of the legacy 4-d view) from NCHW to NHWC order, or back.
  std::vector<Dtype> reordered(const std::vector<Dtype>& v, bool to_nhwc) const;

  Device device_;
  prim::DataType storage_ = dtype_of<Dtype>();
  bool channels_last_ = false;
  std::vector<int64_t> shape_;
  int64_t count_ = 0;
  mutable std::shared_ptr<prim::DeviceBuffer> data_, diff_;
};

}  // namespace crema
