// Errors about a layer point into the file that defines it: "net.prototxt:12: layer conv
// (Convolution): ...", for current and V1 net files and for nets written inside a solver file;
// weights written back carry no such place.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/net.h"
#include "core/upgrade_proto.h"
#include "data/data_test_util.h"

namespace crema {
namespace {

using test::error_of;
using test::TempDir;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Line 4 holds the Input layer, line 5 the convolution with a zero kernel.
const char* const kBadNet =
    "name: \"bad\"\n"
    "# a comment, so that lines and layers differ\n"
    "\n"
    "layer { name: \"in\" type: \"Input\" top: \"x\" input_param { shape { dim: 1 dim: 1 dim: 4 "
    "dim: 4 } } }\n"
    "layer { name: \"conv\" type: \"Convolution\" bottom: \"x\" top: \"y\"\n"
    "  convolution_param { num_output: 2 kernel_size: 0 } }\n";

TEST(LayerPlace, ErrorsOfANetFileNameItsLine) {
  TempDir dir;
  write_text(dir.file("bad.prototxt"), kBadNet);
  const NetParameter p = load_net_param_text(dir.file("bad.prototxt"));
  const std::string error = error_of([&] { Net<float> net(p, TRAIN, Device::kCPU); });
  EXPECT_EQ(error.rfind(dir.file("bad.prototxt") + ":5: layer conv (Convolution): ", 0), 0u)
      << error;
  // Wiring errors too.
  write_text(dir.file("unwired.prototxt"),
             "layer { name: \"a\" type: \"ReLU\" bottom: \"nothing\" top: \"b\" }\n");
  const std::string unwired = error_of([&] {
    Net<float> net(load_net_param_text(dir.file("unwired.prototxt")), TRAIN, Device::kCPU);
  });
  EXPECT_EQ(unwired.rfind(dir.file("unwired.prototxt") + ":1: layer a", 0), 0u) << unwired;
}

// A control character in the name is shown escaped, and the place and name once.
TEST(LayerPlace, ALayerNameWithANulIsNamedOnce) {
  TempDir dir;
  std::string net = kBadNet;
  net.replace(net.find("\"conv\""), 6, "\"c\\000onv\"");
  write_text(dir.file("bad.prototxt"), net);
  const NetParameter p = load_net_param_text(dir.file("bad.prototxt"));
  const std::string error = error_of([&] { Net<float> net(p, TRAIN, Device::kCPU); });
  const std::string prefix = dir.file("bad.prototxt") + ":5: layer c\\x00onv (Convolution): ";
  EXPECT_EQ(error.rfind(prefix, 0), 0u) << error;
  EXPECT_EQ(error.find(prefix, 1), std::string::npos) << error;
}

TEST(LayerPlace, V1NetsAndSolverFilesPointIntoTheirFiles) {
  TempDir dir;
  write_text(dir.file("v1.prototxt"),
             "name: \"v1\"\n"
             "input: \"x\" input_dim: 1 input_dim: 1 input_dim: 4 input_dim: 4\n"
             "layers { name: \"pool\" type: POOLING bottom: \"x\" top: \"y\"\n"
             "  pooling_param { pool: MAX kernel_size: 0 } }\n");
  const std::string v1 = error_of(
      [&] { Net<float> net(load_net_param_text(dir.file("v1.prototxt")), TRAIN, Device::kCPU); });
  EXPECT_EQ(v1.rfind(dir.file("v1.prototxt") + ":3: layer pool (Pooling): ", 0), 0u) << v1;

  write_text(dir.file("solver.prototxt"),
             std::string("base_lr: 0.1\nnet_param {\n") + kBadNet + "}\n");
  const SolverParameter s = load_solver_param(dir.file("solver.prototxt"));
  EXPECT_FALSE(s.has_train_net_param());
  const std::string inline_net =
      error_of([&] { Net<float> net(s.net_param(), TRAIN, Device::kCPU); });
  EXPECT_EQ(inline_net.rfind(dir.file("solver.prototxt") + ":7: layer conv (Convolution): ", 0), 0u)
      << inline_net;
}

TEST(LayerPlace, WeightsWrittenBackCarryNoPlace) {
  TempDir dir;
  write_text(
      dir.file("net.prototxt"),
      "layer { name: \"in\" type: \"Input\" top: \"x\" input_param { shape { dim: 2 dim: 3 } } }\n"
      "layer { name: \"ip\" type: \"InnerProduct\" bottom: \"x\" top: \"y\"\n"
      "  inner_product_param { num_output: 2 } }\n");
  const NetParameter p = load_net_param_text(dir.file("net.prototxt"));
  EXPECT_EQ(p.layer(1).source_location(), dir.file("net.prototxt") + ":2");
  Net<float> net(p, TRAIN, Device::kCPU);
  NetParameter written;
  net.to_proto(&written);
  for (const LayerParameter& l : written.layer()) EXPECT_FALSE(l.has_source_location()) << l.name();
}

}  // namespace
}  // namespace crema
