// crema.export_onnx: a deploy prototxt with its weights, or a Net in memory, written as an ONNX
// model (tools/export/onnx_export.h says what the model holds).
#include <pybind11/stl.h>

#include "bindings.h"
#include "core/errors.h"
#ifdef CREMA_WITH_ONNX
#include "core/proto_io.h"
#include "export/onnx_export.h"
#endif

namespace crema::python {
namespace {

// A str or an os.PathLike, as a path.
std::string path_of(const py::object& p, const char* what) {
  CREMA_REQUIRE(!p.is_none(), "export_onnx needs ", what);
  return py::str(py::module_::import("os").attr("fspath")(p));
}

void export_onnx(const py::object& model, py::object weights, py::object onnx_file, int batch,
                 bool dynamic_batch) {
#ifdef CREMA_WITH_ONNX
  OnnxExportOptions options;
  options.dynamic_batch = dynamic_batch;
  if (py::isinstance<NetRef>(model)) {
    // export_onnx(net, "net.onnx"): the net's own weights and shapes.
    if (onnx_file.is_none()) std::swap(weights, onnx_file);
    CREMA_REQUIRE(weights.is_none(), "export_onnx: a Net carries its weights; give no weights");
    CREMA_REQUIRE(batch == 0, "export_onnx: batch applies to a prototxt; reshape the Net instead");
    const std::string out = path_of(onnx_file, "onnx_file");
    const NetRef& ref = model.cast<const NetRef&>();
    upload_host_copies();
    const onnx::ModelProto m = net_to_onnx(*ref.net, options);
    std::string bytes;
    CREMA_REQUIRE(m.SerializeToString(&bytes), out,
                  ": the model is too large for one ONNX file (2 GiB)");
    write_file_atomic(bytes, out);
    return;
  }
  options.batch = batch;
  export_onnx(OnnxExportRequest{path_of(model, "model"), path_of(weights, "weights"),
                                path_of(onnx_file, "onnx_file"), options});
#else
  (void)model, (void)weights, (void)onnx_file, (void)batch, (void)dynamic_batch;
  fail("export_onnx: this crema was built without ONNX export (Debian: libonnx-dev)");
#endif
}

}  // namespace

void bind_export(py::module_& m) {
  m.def("export_onnx", &export_onnx, py::arg("model"), py::arg("weights") = py::none(),
        py::arg("onnx_file") = py::none(), py::kw_only(), py::arg("batch") = 0,
        py::arg("dynamic_batch") = false,
        R"(Writes a net as an ONNX model (opset 17), checked by onnx's checker.

export_onnx("deploy.prototxt", "net.caffemodel", "net.onnx", batch=1, dynamic_batch=False)
export_onnx(net, "net.onnx")   # a crema.Net, with its current weights and shapes

batch replaces the batch size of the prototxt's Input layers; dynamic_batch makes the batch axis
of the model's inputs and outputs symbolic. Raises crema.Error naming the layer that cannot be
converted, or the file that cannot be read or written.)");
}

}  // namespace crema::python
