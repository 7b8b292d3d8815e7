// Blob (a crema Tensor) for Python: shape, reshape, and data / diff as numpy arrays, zero-copy on
// the CPU and through host copies on a GPU.
#include <map>
#include <vector>

#include "bindings.h"
#include "core/errors.h"

namespace crema::python {
namespace {

using TensorPtr = std::shared_ptr<Tensor<float>>;

std::vector<py::ssize_t> array_shape(const Tensor<float>& t) {
  return std::vector<py::ssize_t>(t.shape().begin(), t.shape().end());
}

// An array over memory that `owner` keeps alive for as long as the array lives.
template <typename Owner>
py::array array_over(const Tensor<float>& t, float* memory, Owner owner) {
  auto* held = new Owner(std::move(owner));
  py::capsule base(held, [](void* p) { delete static_cast<Owner*>(p); });
  return py::array_t<float>(array_shape(t), memory, base);
}

// Host copies of GPU tensors handed to Python, by tensor. A copy is re-read from the device at
// every access and written back before the next computation: Python may have written to it.
struct HostCopy {
  std::weak_ptr<Tensor<float>> tensor;
  std::shared_ptr<std::vector<float>> values;
  bool diff = false;
  bool handed_out = false;
};
std::map<std::pair<const Tensor<float>*, bool>, HostCopy>& host_copies() {
  static std::map<std::pair<const Tensor<float>*, bool>, HostCopy> copies;
  return copies;
}

py::array host_copy_array(const TensorPtr& t, bool diff) {
  HostCopy& copy = host_copies()[{t.get(), diff}];
  // A new tensor at the address of a freed one, or a new size: a new buffer (arrays handed out
  // earlier keep the old one).
  if (copy.tensor.lock() != t || !copy.values || copy.values->size() != size_t(t->count())) {
    copy = HostCopy{t, std::make_shared<std::vector<float>>(size_t(t->count())), diff, false};
  }
  const std::vector<float> values = diff ? t->diff_vector() : t->data_vector();
  std::copy(values.begin(), values.end(), copy.values->begin());
  copy.handed_out = true;
  return array_over(*t, copy.values->data(), copy.values);
}

}  // namespace

py::array tensor_array(const TensorPtr& t, bool diff) {
  if (t->device() != Device::kCPU) return host_copy_array(t, diff);
  float* memory = diff ? t->mutable_diff() : t->mutable_data();  // allocates at first use
  return array_over(*t, memory, diff ? t->shared_diff_buffer() : t->shared_data_buffer());
}

void upload_host_copies() {
  auto& copies = host_copies();
  for (auto it = copies.begin(); it != copies.end();) {
    HostCopy& copy = it->second;
    const TensorPtr t = copy.tensor.lock();
    if (!t) {
      it = copies.erase(it);
      continue;
    }
    if (copy.handed_out && copy.values->size() == size_t(t->count())) {
      if (copy.diff)
        t->set_diff(*copy.values);
      else
        t->set_data(*copy.values);
    }
    copy.handed_out = false;
    ++it;
  }
}

void bind_blob(py::module_& m) {
  py::class_<Tensor<float>, TensorPtr>(m, "Blob",
                                       "A net's blob: data and diff of one shape, as in Caffe")
      .def_property_readonly(
          "data", [](const TensorPtr& t) { return tensor_array(t, false); },
          "the values, a numpy array (a view of the blob's memory on the CPU)")
      .def_property_readonly(
          "diff", [](const TensorPtr& t) { return tensor_array(t, true); },
          "the gradients, a numpy array (a view of the blob's memory on the CPU)")
      .def_property_readonly("shape",
                             [](const Tensor<float>& t) {
                               py::tuple shape(t.shape().size());
                               for (size_t i = 0; i < t.shape().size(); ++i)
                                 shape[i] = t.shape()[i];
                               return shape;
                             })
      .def_property_readonly("count", [](const Tensor<float>& t) { return t.count(); })
      .def_property_readonly("num", [](const Tensor<float>& t) { return t.num(); })
      .def_property_readonly("channels", [](const Tensor<float>& t) { return t.channels(); })
      .def_property_readonly("height", [](const Tensor<float>& t) { return t.height(); })
      .def_property_readonly("width", [](const Tensor<float>& t) { return t.width(); })
      .def(
          "reshape",
          [](Tensor<float>& t, const py::args& dims) {
            upload_host_copies();
            std::vector<int64_t> shape;
            for (const py::handle d : dims) {
              CREMA_REQUIRE(py::isinstance<py::int_>(d), "Blob.reshape takes integer sizes, got ",
                            std::string(py::str(py::type::of(d))));
              shape.push_back(d.cast<int64_t>());
            }
            t.reshape(shape);
          },
          "reshape(*sizes): gives the blob a new shape; net.reshape() then fits the layers "
          "after it. Take the arrays again: those taken before keep their shape, and the old "
          "memory where the blob grew");
}

}  // namespace crema::python
