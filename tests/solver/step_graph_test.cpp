// Which nets a CUDA graph can replay (StepGraph::unsupported), decided on the host: a layer
// that changes its work every step or waits for the GPU, or a data layer after fed layers,
// rules the graph out.
#include "solver/step_graph.h"

#include <gtest/gtest.h>

#include <string>

#include "core/proto_io.h"

namespace crema {
namespace {

std::string reason(const std::string& layers) {
  NetParameter p;
  read_text_proto_string(R"(
    name: "n" layer { name: "in" type: "Input" top: "x" top: "l"
      input_param { shape { dim: 2 dim: 3 } shape { dim: 2 } } }
    layer { name: "ip" type: "InnerProduct" bottom: "x" top: "y"
      inner_product_param { num_output: 3 } } )" +
                             layers,
                         "step_graph_test", &p);
  p.mutable_state()->set_phase(TRAIN);
  Net<float> net(p, Device::kCPU);
  return StepGraph<float>::unsupported(net);
}

TEST(StepGraph, DecidesWhichNetsItCanReplay) {
  EXPECT_EQ(reason(""), "");
  EXPECT_EQ(reason(R"(layer { name: "drop" type: "Dropout" bottom: "y" top: "y" })"),
            "layer drop (Dropout) draws a new mask every step");
  EXPECT_EQ(reason(R"(layer { name: "acc" type: "Accuracy" bottom: "y" bottom: "l" top: "a" })"),
            "layer acc (Accuracy) waits for the GPU to check its labels");
  EXPECT_EQ(reason(R"(layer { name: "late" type: "DummyData" top: "z"
                       dummy_data_param { shape { dim: 2 } } })"),
            "layer late (DummyData) has no bottoms but follows layers that have");
}

}  // namespace
}  // namespace crema
