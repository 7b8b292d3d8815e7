// The upgrade tools' functions: the V1 LeNet fixture to the current format as text and as a
// binary net, a current net left as it is, a solver_type enum to the type string, and errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "core/errors.h"
#include "core/proto_io.h"
#include "core/upgrade_files.h"
#include "crema.pb.h"
#include "data/data_test_util.h"
#include "data/image_test_util.h"

namespace crema {
namespace {

using test::error_of;

using test::TempDir;

const std::string kV1 = std::string(CREMA_SOURCE_DIR) + "/tests/data/v1_lenet.prototxt";

// The V1 LeNet, upgraded: layers with string types, blobs_lr as ParamSpec, scale moved to
// transform_param.
void expect_upgraded_lenet(const NetParameter& net) {
  EXPECT_EQ(net.layers_size(), 0);
  ASSERT_GE(net.layer_size(), 9);
  EXPECT_EQ(net.layer(0).type(), "Data");
  EXPECT_FLOAT_EQ(net.layer(0).transform_param().scale(), 0.00390625f);
  EXPECT_FALSE(net.layer(0).data_param().has_scale());
  const LayerParameter* conv = nullptr;
  for (const LayerParameter& l : net.layer())
    if (l.name() == "conv1") conv = &l;
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->type(), "Convolution");
  ASSERT_EQ(conv->param_size(), 2);
  EXPECT_EQ(conv->param(1).lr_mult(), 2);
  EXPECT_EQ(conv->param(1).decay_mult(), 0);
}

TEST(UpgradeTools, NetTextFromV1) {
  TempDir dir;
  const std::string out = dir.file("lenet.prototxt");
  EXPECT_TRUE(upgrade_net_text_file(kV1, out));
  NetParameter net;
  read_text_proto(out, &net);
  expect_upgraded_lenet(net);
  // Upgrading the upgraded file changes nothing.
  EXPECT_FALSE(upgrade_net_text_file(out, dir.file("again.prototxt")));
  NetParameter again;
  read_text_proto(dir.file("again.prototxt"), &again);
  EXPECT_EQ(again.SerializeAsString(), net.SerializeAsString());
}

TEST(UpgradeTools, NetBinaryFromV1) {
  TempDir dir;
  NetParameter v1;
  read_text_proto(kV1, &v1);  // as stored: V1 `layers`
  ASSERT_GT(v1.layers_size(), 0);
  write_binary_proto_atomic(v1, dir.file("v1.caffemodel"));
  EXPECT_TRUE(upgrade_net_binary_file(dir.file("v1.caffemodel"), dir.file("new.caffemodel")));
  NetParameter net;
  read_binary_proto(dir.file("new.caffemodel"), &net);
  expect_upgraded_lenet(net);
}

TEST(UpgradeTools, SolverTypeEnum) {
  TempDir dir;
  test::write_text(dir.file("solver.prototxt"),
                   "net: \"lenet.prototxt\"\nbase_lr: 0.01\nsolver_type: NESTEROV\n");
  EXPECT_TRUE(upgrade_solver_text_file(dir.file("solver.prototxt"), dir.file("new.prototxt")));
  SolverParameter s;
  read_text_proto(dir.file("new.prototxt"), &s);
  EXPECT_EQ(s.type(), "Nesterov");
  EXPECT_FALSE(s.has_solver_type());
  EXPECT_EQ(s.net(), "lenet.prototxt");
  EXPECT_FALSE(upgrade_solver_text_file(dir.file("new.prototxt"), dir.file("again.prototxt")));
}

TEST(UpgradeTools, Errors) {
  TempDir dir;
  EXPECT_NE(error_of([&] {
              upgrade_net_text_file(dir.file("none.prototxt"), dir.file("o"));
            }).find(dir.file("none.prototxt")),
            std::string::npos);
  test::write_text(dir.file("bad.prototxt"), "layers { name: \"x\" type: NO_SUCH_TYPE }\n");
  const std::string msg =
      error_of([&] { upgrade_net_text_file(dir.file("bad.prototxt"), dir.file("o")); });
  EXPECT_NE(msg.find(dir.file("bad.prototxt") + ":1:"), std::string::npos) << msg;
  test::write_text(dir.file("junk.caffemodel"), "\xff\xff\xff not a net");
  EXPECT_NE(error_of([&] {
              upgrade_net_binary_file(dir.file("junk.caffemodel"), dir.file("o"));
            }).find(dir.file("junk.caffemodel")),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.file("o")));
}

}  // namespace
}  // namespace crema
