// What the parts of the crema Python module (_crema) share: the device new nets and solvers go
// to, the net reference Python objects hold, numpy views of tensors, and each part's bind
// function. The pure-Python package (python/crema) builds pycaffe's names on top.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>

#include "core/net.h"
#include "core/tensor.h"
#include "primitives/handle.h"

namespace crema::python {

namespace py = pybind11;

// set_mode_cpu / set_mode_gpu / set_device: where nets and solvers made from now on live. A net
// stays on the device it was made on.
struct Mode {
  Device device = Device::kCPU;
  int device_id = 0;
};
Mode& mode();

// A net as Python holds it, with the handle its work is queued on. Both pointers share the
// ownership of whatever owns them: a net made from Python owns its handle; a solver owns its
// nets and their handle, so a solver's net keeps the solver alive.
struct NetRef {
  std::shared_ptr<Net<float>> net;
  std::shared_ptr<prim::Handle> handle;
};

// The data (or diff) of t as a numpy array of t's shape. On the CPU it is a view of the tensor's
// memory (writes reach the net) that keeps that memory alive. On a GPU it is a host copy, as
// Caffe's SyncedMemory keeps one: made when read, and copied back to the device before the next
// computation (upload_host_copies).
py::array tensor_array(const std::shared_ptr<Tensor<float>>& t, bool diff);
// Copies the host copies handed out since the last computation back to their tensors on the
// GPU; every entry point that computes or reads tensors on the device calls it first.
void upload_host_copies();

void bind_blob(py::module_& m);
void bind_net(py::module_& m);
void bind_solver(py::module_& m);
void bind_io(py::module_& m);
void bind_export(py::module_& m);

}  // namespace crema::python
