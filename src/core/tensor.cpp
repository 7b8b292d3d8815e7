// Tensor implementation: shapes, lazy device memory, copies and BlobProto I/O.
#include "core/tensor.h"

#include <glog/logging.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <new>
#include <sstream>
#include <type_traits>

#include "core/errors.h"
#include "crema.pb.h"

namespace crema {
namespace {

std::string shape_string_of(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? " " : "") << shape[i];
  return os.str();
}

}  // namespace

int64_t checked_count(std::initializer_list<int64_t> dims) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    if (d != 0 && count > kMaxTensorElements / d)
      count = kMaxTensorElements + 1;
    else
      count *= d;
  }
  // A zero after an overflowing prefix makes the product 0, which is exact.
  return count > kMaxTensorElements ? -1 : count;
}

int desc_size(int64_t v, const char* what) {
  if (v > std::numeric_limits<int32_t>::max())
    fail(what, " of ", v, " is more than 2147483647, the largest size of a primitive descriptor");
  return int(v);
}

prim::TensorDesc flat_desc(prim::DataType t, int64_t count) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (count <= kMax) return prim::TensorDesc::nchw(t, 1, 1, 1, int(count));
  // Factors below 2^20 by trial division (a few milliseconds at most, and only past 2^31
  // elements), the rest as one factor; then each factor, largest first, goes to the first size
  // from w to n that stays below 2^31. Counts of real shapes are products of small sizes.
  std::vector<int64_t> factors;
  int64_t rest = count;
  for (int64_t p = 2; p < (int64_t(1) << 20) && p * p <= rest; ++p)
    while (rest % p == 0) {
      factors.push_back(p);
      rest /= p;
    }
  if (rest > 1) factors.push_back(rest);
  std::sort(factors.begin(), factors.end(), std::greater<>());
  int64_t dims[4] = {1, 1, 1, 1};
  for (const int64_t f : factors) {
    int slot = 3;
    while (slot >= 0 && dims[slot] > kMax / f) --slot;
    if (slot < 0) fail("a flat array of ", count, " elements has no split into sizes below 2^31");
    dims[slot] *= f;
  }
  return prim::TensorDesc::nchw(t, int(dims[0]), int(dims[1]), int(dims[2]), int(dims[3]));
}

template <typename Dtype>
Tensor<Dtype>::Tensor(const std::vector<int64_t>& shape, Device device) : device_(device) {
  reshape(shape);
}

template <typename Dtype>
void Tensor<Dtype>::reshape(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    CREMA_REQUIRE(d >= 0, "negative tensor dimension in shape (", shape_string_of(shape), ")");
    if (d != 0 && count > kMaxTensorElements / d)
      fail("tensor of shape (", shape_string_of(shape), ") is too large: more than ",
           kMaxTensorElements, " elements");
    count *= d;
  }
  // Refused before any memory is touched: such a tensor could never be allocated, and the
  // layers' fillers would otherwise spend minutes on its parameters first.
  const size_t need = size_t(count) * prim::dtype_size(storage_);
  const size_t memory = prim::device_total_bytes(device_);
  if (memory > 0 && need > memory)
    fail("tensor of shape (", shape_string_of(shape), ") is too large: ", need,
         " bytes, more than the ", memory, " bytes of ", device_ == Device::kCPU ? "host" : "GPU",
         " memory");
  shape_ = shape;
  count_ = count;
}

template <typename Dtype>
int Tensor<Dtype>::canonical_axis(int axis) const {
  const int n = num_axes();
  CREMA_REQUIRE(axis >= -n && axis < n, "axis ", axis, " out of range for a tensor of shape (",
                shape_string(), ")");
  return axis < 0 ? axis + n : axis;
}

template <typename Dtype>
int64_t Tensor<Dtype>::count(int start, int end) const {
  int64_t c = 1;
  for (int i = start; i < end; ++i) c *= shape_[i];
  return c;
}

template <typename Dtype>
int64_t Tensor<Dtype>::legacy_shape(int axis) const {
  return axis < num_axes() ? shape_[axis] : 1;
}

template <typename Dtype>
void* Tensor<Dtype>::memory(std::shared_ptr<prim::DeviceBuffer>& buf) const {
  const size_t need = bytes();
  if (!buf || buf->bytes() < need) {
    try {
      buf = std::make_shared<prim::DeviceBuffer>(device_, need);
    } catch (const std::bad_alloc&) {
      fail("cannot allocate ", need, " bytes for a tensor of shape (", shape_string(), ")");
    } catch (const prim::PrimError& e) {
      fail("a tensor of shape (", shape_string(), "): ", e.what());
    }
    prim::device_memset_zero(device_, buf->get(), need);
  }
  return buf->get();
}

template <typename Dtype>
void* Tensor<Dtype>::typed(std::shared_ptr<prim::DeviceBuffer>& buf) const {
  CREMA_REQUIRE(storage_ == dtype_of<Dtype>(), "a tensor of shape (", shape_string(),
                ") stored as ", prim::dtype_name(storage_), " read as ",
                prim::dtype_name(dtype_of<Dtype>()));
  return memory(buf);
}

template <typename Dtype>
void Tensor<Dtype>::set_storage(prim::DataType t) {
  const bool ok = t == dtype_of<Dtype>() || (std::is_same_v<Dtype, float> && prim::half_size(t));
  CREMA_REQUIRE(ok, "a tensor of ", prim::dtype_name(dtype_of<Dtype>()), " cannot be stored as ",
                prim::dtype_name(t));
  if (t == storage_) return;
  storage_ = t;
  data_.reset();
  diff_.reset();
}

template <typename Dtype>
std::vector<Dtype> Tensor<Dtype>::host_values(std::shared_ptr<prim::DeviceBuffer>& buf) const {
  std::vector<Dtype> v(static_cast<size_t>(count_));
  if (storage_ == dtype_of<Dtype>()) {
    prim::device_memcpy(v.data(), Device::kCPU, memory(buf), device_, bytes());
  } else {
    std::vector<char> raw(bytes());
    prim::device_memcpy(raw.data(), Device::kCPU, memory(buf), device_, bytes());
    prim::convert_values(storage_, raw.data(), dtype_of<Dtype>(), v.data(), count_);
  }
  return channels_last_ ? reordered(v, false) : v;
}

template <typename Dtype>
std::vector<Dtype> Tensor<Dtype>::reordered(const std::vector<Dtype>& v, bool to_nhwc) const {
  std::vector<Dtype> out(v.size());
  const int64_t c = channels(), hw = height() * width(), image = c * hw;
  for (int64_t n = 0; n < num(); ++n)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t p = 0; p < hw; ++p) {
        const size_t nchw = size_t(n * image + k * hw + p), nhwc = size_t(n * image + p * c + k);
        out[to_nhwc ? nhwc : nchw] = v[to_nhwc ? nchw : nhwc];
      }
  return out;
}

template <typename Dtype>
void Tensor<Dtype>::set_host_values(std::shared_ptr<prim::DeviceBuffer>& buf,
                                    const std::vector<Dtype>& values) {
  CHECK_EQ(int64_t(values.size()), count_);
  if (channels_last_) return set_stored_values(buf, reordered(values, true));
  set_stored_values(buf, values);
}

template <typename Dtype>
void Tensor<Dtype>::set_stored_values(std::shared_ptr<prim::DeviceBuffer>& buf,
                                      const std::vector<Dtype>& values) {
  if (storage_ == dtype_of<Dtype>()) {
    prim::device_memcpy(memory(buf), device_, values.data(), Device::kCPU, bytes());
  } else {
    std::vector<char> raw(bytes());
    prim::convert_values(dtype_of<Dtype>(), values.data(), storage_, raw.data(), count_);
    prim::device_memcpy(memory(buf), device_, raw.data(), Device::kCPU, bytes());
  }
}

namespace {

// share_data / share_diff: the two tensors must have the same count and storage type.
template <typename Dtype>
void check_shareable(const Tensor<Dtype>& mine, const Tensor<Dtype>& other, const char* what) {
  CREMA_REQUIRE(mine.count() == other.count(), "cannot share the ", what, " of a tensor of shape (",
                other.shape_string(), ") with one of shape (", mine.shape_string(), ")");
  CREMA_REQUIRE(mine.storage() == other.storage(), "cannot share the ", what,
                " of a tensor stored as ", prim::dtype_name(other.storage()),
                " with one stored as ", prim::dtype_name(mine.storage()));
  auto layout = [](const Tensor<Dtype>& t) { return t.channels_last() ? "NHWC" : "NCHW"; };
  CREMA_REQUIRE(mine.channels_last() == other.channels_last(), "cannot share the ", what,
                " of a tensor stored ", layout(other), " with one stored ", layout(mine));
}

}  // namespace

template <typename Dtype>
void Tensor<Dtype>::share_data(const Tensor& other) {
  check_shareable(*this, other, "data");
  other.raw_data();  // allocates it
  data_ = other.data_;
}

template <typename Dtype>
void Tensor<Dtype>::share_diff(const Tensor& other) {
  check_shareable(*this, other, "gradient");
  other.raw_diff();  // allocates it
  diff_ = other.diff_;
}

template <typename Dtype>
void Tensor<Dtype>::copy_from(const Tensor& other, bool copy_diff, bool reshape) {
  if (reshape) {
    this->reshape(other.shape());
  } else {
    CREMA_REQUIRE(count_ == other.count_, "cannot copy a tensor of shape (", other.shape_string(),
                  ") into one of shape (", shape_string(), ")");
  }
  if (storage_ != other.storage_ || channels_last_ != other.channels_last_) {  // through the host
    if (copy_diff)
      set_diff(other.diff_vector());
    else
      set_data(other.data_vector());
  } else if (copy_diff) {
    prim::device_memcpy(mutable_raw_diff(), device_, other.raw_diff(), other.device_, bytes());
  } else {
    prim::device_memcpy(mutable_raw_data(), device_, other.raw_data(), other.device_, bytes());
  }
}

template <typename Dtype>
std::vector<Dtype> Tensor<Dtype>::data_vector() const {
  return host_values(data_);
}

template <typename Dtype>
std::vector<Dtype> Tensor<Dtype>::diff_vector() const {
  return host_values(diff_);
}

template <typename Dtype>
void Tensor<Dtype>::set_data(const std::vector<Dtype>& values) {
  set_host_values(data_, values);
}

template <typename Dtype>
void Tensor<Dtype>::set_diff(const std::vector<Dtype>& values) {
  set_host_values(diff_, values);
}

template <typename Dtype>
void Tensor<Dtype>::fill_data(Dtype value) {
  set_data(std::vector<Dtype>(count_, value));
}

template <typename Dtype>
void Tensor<Dtype>::fill_diff(Dtype value) {
  set_diff(std::vector<Dtype>(count_, value));
}

template <typename Dtype>
void Tensor<Dtype>::from_proto(const BlobProto& proto, bool reshape) {
  std::vector<int64_t> shape;
  if (proto.has_num() || proto.has_channels() || proto.has_height() || proto.has_width()) {
    shape = {proto.num(), proto.channels(), proto.height(), proto.width()};
  } else {
    shape.assign(proto.shape().dim().begin(), proto.shape().dim().end());
  }
  if (reshape) {
    this->reshape(shape);
  } else {
    // Legacy 4-d blobs match an N-d shape when the sizes agree after padding with 1s.
    Tensor<Dtype> probe;
    probe.reshape(shape);
    bool same = probe.count() == count_;
    if (same && proto.has_num()) {
      same = probe.num() == num() && probe.channels() == channels() && probe.height() == height() &&
             probe.width() == width();
    } else if (same) {
      same = shape == shape_;
    }
    CREMA_REQUIRE(same, "stored blob has shape (", probe.shape_string(), ") but (", shape_string(),
                  ") was expected");
  }
  // The stored values are checked against the shape before anything is allocated: a hostile
  // file may claim a huge shape with no data behind it.
  const bool doubles = proto.double_data_size() > 0;
  const int64_t stored = doubles ? proto.double_data_size() : proto.data_size();
  CREMA_REQUIRE(stored == count_, "blob holds ", stored, " values for shape (", shape_string(),
                ")");
  std::vector<Dtype> values(count_);
  for (int64_t i = 0; i < count_; ++i)
    values[i] = Dtype(doubles ? proto.double_data(int(i)) : proto.data(int(i)));
  set_data(values);
  if (proto.double_diff_size() == count_ && count_ > 0) {
    for (int64_t i = 0; i < count_; ++i) values[i] = Dtype(proto.double_diff(int(i)));
    set_diff(values);
  } else if (proto.diff_size() == count_ && count_ > 0) {
    for (int64_t i = 0; i < count_; ++i) values[i] = Dtype(proto.diff(int(i)));
    set_diff(values);
  }
}

template <typename Dtype>
void Tensor<Dtype>::to_proto(BlobProto* proto, bool write_diff) const {
  proto->Clear();
  for (int64_t d : shape_) proto->mutable_shape()->add_dim(d);
  const std::vector<Dtype> values = data_vector();
  const std::vector<Dtype> diffs = write_diff ? diff_vector() : std::vector<Dtype>();
  if constexpr (sizeof(Dtype) == 8) {
    for (Dtype v : values) proto->add_double_data(v);
    for (Dtype v : diffs) proto->add_double_diff(v);
  } else {
    proto->mutable_data()->Reserve(int(values.size()));
    for (Dtype v : values) proto->add_data(v);
    for (Dtype v : diffs) proto->add_diff(v);
  }
}

template <typename Dtype>
std::string Tensor<Dtype>::shape_string() const {
  std::ostringstream os;
  for (int64_t d : shape_) os << d << " ";
  os << "(" << count_ << ")";
  return os.str();
}

template <typename Dtype>
prim::TensorDesc Tensor<Dtype>::desc() const {
  CREMA_REQUIRE(num_axes() <= 4, "a ", num_axes(), "-d tensor (", shape_string(),
                ") where at most 4 axes are supported");
  return (channels_last_ ? prim::TensorDesc::nhwc : prim::TensorDesc::nchw)(
      storage_, desc_size(num(), "a tensor axis"), desc_size(channels(), "a tensor axis"),
      desc_size(height(), "a tensor axis"), desc_size(width(), "a tensor axis"));
}

template <typename Dtype>
size_t Tensor<Dtype>::allocated_bytes() const {
  size_t total = 0;
  if (data_ && data_.use_count() == 1) total += data_->bytes();
  if (diff_ && diff_.use_count() == 1) total += diff_->bytes();
  return total;
}

template class Tensor<float>;
template class Tensor<double>;

}  // namespace crema
