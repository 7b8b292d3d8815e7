// `crema draw`: the DOT graph of a net (boxes for layers with their shaping parameters,
// octagons for blobs, in-place layers hanging off their blob, names escaped, one phase's layers
// or all), its errors, and every net in models/ drawn to SVG through Graphviz.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "backends/draw_net.h"
#include "core/proto_io.h"
#include "core/upgrade_proto.h"
#include "data/data_test_util.h"

namespace crema {
namespace {

NetParameter small_net() {
  NetParameter p;
  read_text_proto_string(R"(
    name: "small"
    layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 3 dim: 8 dim: 8 } } }
    layer { name: "conv" type: "Convolution" bottom: "x" top: "y"
      convolution_param { num_output: 4 kernel_size: 3 stride: 2 pad: 1 group: 2 }
      include { phase: TRAIN } }
    layer { name: "re\"lu" type: "ReLU" bottom: "y" top: "y" }
    layer { name: "pool" type: "Pooling" bottom: "y" top: "z"
      pooling_param { pool: AVE kernel_size: 2 stride: 2 } })",
                         "small", &p);
  return p;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Draw, DotHasLayersBlobsAndInPlaceEdges) {
  const std::string dot = net_to_dot(small_net(), {});
  EXPECT_TRUE(has(dot, "digraph \"small\" {")) << dot;
  EXPECT_TRUE(has(dot, "rankdir=LR;")) << dot;
  EXPECT_TRUE(has(dot,
                  "label=\"conv\\n(Convolution)\\n4 outputs\\nkernel 3, stride 2, pad 1\\n"
                  "group 2\""))
      << dot;
  EXPECT_TRUE(has(dot, "label=\"pool\\n(Pooling)\\nAVE 2, stride 2\"")) << dot;
  EXPECT_TRUE(has(dot, "\"blob y\" [shape=octagon")) << dot;
  EXPECT_TRUE(has(dot, "\"blob x\" -> \"layer 1\";")) << dot;
  EXPECT_TRUE(has(dot, "\"layer 1\" -> \"blob y\";")) << dot;
  // The in-place ReLU hangs off y without an edge back into it; its quote is escaped.
  EXPECT_TRUE(has(dot, "\"blob y\" -> \"layer 2\" [style=dashed, arrowhead=none];")) << dot;
  EXPECT_FALSE(has(dot, "\"layer 2\" -> \"blob y\"")) << dot;
  EXPECT_TRUE(has(dot, "re\\\"lu")) << dot;
  // TEST leaves the TRAIN-only convolution out; TB turns the graph.
  const std::string test = net_to_dot(small_net(), {"TB", "TEST"});
  EXPECT_FALSE(has(test, "Convolution")) << test;
  EXPECT_TRUE(has(test, "rankdir=TB;")) << test;
}

TEST(Draw, BadOptionsAndNamesAreErrors) {
  EXPECT_EQ(test::error_of([] {
              net_to_dot(small_net(), {"UP", ""});
            }),
            "rankdir must be LR, RL, TB or BT, got \"UP\"");
  EXPECT_EQ(test::error_of([] {
              net_to_dot(small_net(), {"LR", "VAL"});
            }),
            "phase must be TRAIN or TEST (or empty for all layers), got \"VAL\"");
  EXPECT_EQ(test::error_of([] { draw_net(small_net(), {}, "/tmp/net.jpeg"); }),
            "/tmp/net.jpeg: name the drawing .svg, .png, .pdf or .dot");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

TEST(Draw, EveryModelDrawsToSvg) {
  if (std::system("dot -V > /dev/null 2>&1") != 0) GTEST_SKIP() << "Graphviz's dot is missing";
  test::TempDir dir;
  int drawn = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(CREMA_SOURCE_DIR) + "/models")) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".prototxt" || has(path, "solver")) continue;
    SCOPED_TRACE(path);
    const std::string out = dir.file("net" + std::to_string(drawn++) + ".svg");
    draw_net(load_net_param_text(path), {}, out);
    const std::string svg = read_file(out);
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
    EXPECT_TRUE(has(svg, "<svg"));
    EXPECT_GT(svg.size(), 8000u);  // LeNet's deploy net, the smallest, draws to about 15 KB
  }
  EXPECT_GE(drawn, 14);
  // The .dot form needs no Graphviz, and the file appears whole.
  draw_net(small_net(), {}, dir.file("small.dot"));
  EXPECT_EQ(read_file(dir.file("small.dot")), net_to_dot(small_net(), {}));
}

}  // namespace
}  // namespace crema
