// The compiled part of the crema Python module (_crema): device mode, errors, logging, and the
// parts bound in the other files of this folder.
#include <glog/logging.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "core/errors.h"
#include "core/rng.h"
#include "layers/layer_registry.h"
#include "primitives/types.h"
#include "python_layer.h"

namespace crema::python {

Mode& mode() {
  static Mode current;
  return current;
}

namespace {

void set_mode_gpu() {
  CREMA_REQUIRE(prim::cuda_available(), "set_mode_gpu: no GPU is visible to this crema",
                " (a build without CUDA, or no device)");
  mode().device = Device::kCUDA;
}

void set_device(int id) {
  const int visible = prim::cuda_device_count();
  CREMA_REQUIRE(id >= 0 && id < visible, "set_device: no GPU ", id, " (", visible, " found)");
  mode().device_id = id;
}

void start_logging() {
  // Logs go to stderr with Caffe's line prefix, as the crema tool's; GLOG_minloglevel=1 and the
  // like still apply (glog reads its GLOG_ variables itself).
  if (google::IsGoogleLoggingInitialized()) return;
  FLAGS_logtostderr = true;
  FLAGS_log_year_in_prefix = false;
  google::InitGoogleLogging("crema");
}

}  // namespace

void define_module(py::module_& m) {
  m.doc() = "crema's compiled core; import crema (the package) instead";
  start_logging();

  // crema's one-line errors, a RuntimeError as pycaffe's were. The type stays referenced for the
  // life of the process: no Python object is released at exit, when the interpreter may be gone.
  static py::handle error_type;
  error_type = py::exception<crema::Error>(m, "Error", PyExc_RuntimeError).release();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const crema::Error& e) {
      PyErr_SetString(error_type.ptr(), e.what());
    } catch (const crema::prim::PrimError& e) {
      PyErr_SetString(error_type.ptr(), e.what());
    }
  });

  m.attr("TRAIN") = int(crema::TRAIN);
  m.attr("TEST") = int(crema::TEST);
  m.def("set_mode_cpu", [] { mode().device = crema::Device::kCPU; });
  m.def("set_mode_gpu", &set_mode_gpu);
  m.def("set_device", &set_device, py::arg("device_id"));
  m.def("mode", [] { return mode().device == crema::Device::kCPU ? "CPU" : "GPU"; });
  m.def(
      "set_random_seed", [](int64_t seed) { crema::seed_thread_rng(seed); }, py::arg("seed"),
      "seeds the generator of weight fillers and data shuffling");
  m.def("layer_type_list", &crema::layer_types);

  bind_blob(m);
  bind_net(m);
  bind_solver(m);
  bind_io(m);
  bind_export(m);
}

}  // namespace crema::python

PYBIND11_MODULE(_crema, m) {
  crema::python::define_module(m);
  crema::python::register_python_layer();
}
