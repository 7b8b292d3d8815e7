// The library's file readers and writers that the pure-Python parts (crema.io, crema.draw) use:
// image decoding (OpenCV, as the ImageData layer decodes) and drawing a net with Graphviz (as
// `crema draw`). Nets cross as serialized NetParameter bytes from the Python protobuf classes.
#include <pybind11/stl.h>

#include <string>

#include "backends/draw_net.h"
#include "bindings.h"
#include "core/proto_io.h"
#include "core/upgrade_proto.h"
#include "data/image_io.h"

namespace crema::python {
namespace {

NetParameter parse_net(const py::bytes& serialized, const std::string& name) {
  NetParameter net;
  read_binary_proto_bytes(std::string(serialized), name, &net);
  return net;
}

}  // namespace

void bind_io(py::module_& m) {
  m.def(
      "_decode_image",
      [](const std::string& path, bool color) {
        const std::string bytes = read_file_bytes(path);
        ChwImage image;
        decode_image(bytes, path, color ? ColorMode::kColor : ColorMode::kGray, &image);
        py::array_t<float> out({image.channels, image.height, image.width});
        std::copy(image.data.begin(), image.data.end(), out.mutable_data());
        return out;
      },
      py::arg("path"), py::arg("color"),
      "the image file's pixels as channels x height x width floats in [0, 255], BGR");
  m.def("image_io_available", &image_io_available, "whether this build decodes images");
  m.def(
      "_net_to_dot",
      [](const py::bytes& net, const std::string& rankdir, const std::string& phase) {
        return net_to_dot(parse_net(net, "net"), {rankdir, phase});
      },
      py::arg("net"), py::arg("rankdir"), py::arg("phase"));
  m.def(
      "_draw_net",
      [](const py::bytes& net, const std::string& rankdir, const std::string& phase,
         const std::string& path) {
        draw_net(parse_net(net, "net"), {rankdir, phase}, path);
      },
      py::arg("net"), py::arg("rankdir"), py::arg("phase"), py::arg("path"));
  m.def(
      "_read_net_text",
      [](const std::string& path) {
        std::string bytes;
        load_net_param_text(path).SerializeToString(&bytes);
        return py::bytes(bytes);
      },
      py::arg("path"), "a prototxt net, upgraded from old formats, serialized");
  m.def(
      "_read_binary",
      [](const std::string& path, const std::string& type) {
        // Checked by the library's reader: size limits, corrupt files.
        std::string bytes;
        if (type == "BlobProto") {
          BlobProto blob;
          read_binary_proto(path, &blob);
          blob.SerializeToString(&bytes);
        } else {
          load_net_param_binary(path).SerializeToString(&bytes);
        }
        return py::bytes(bytes);
      },
      py::arg("path"), py::arg("type"));
}

}  // namespace crema::python
