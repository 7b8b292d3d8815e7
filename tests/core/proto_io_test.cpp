// Tests of proto_io: text errors with file:line:column, binary round trip and corruption errors,
// and the atomic writers (failure leaves the old file intact and no temp file behind).
#include "core/proto_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.h"
#include "crema.pb.h"
#include "error_util.h"

namespace crema {
namespace {

namespace fs = std::filesystem;

// A fresh, empty directory per test under the gtest temp dir.
fs::path fresh_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(::testing::TempDir()) /
                 (std::string("crema_proto_io_") + info->name() + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

using test::error_of;

NetParameter small_net() {
  NetParameter net;
  net.set_name("tiny");
  LayerParameter* l = net.add_layer();
  l->set_name("ip");
  l->set_type("InnerProduct");
  l->add_bottom("data");
  l->add_top("ip");
  l->mutable_inner_product_param()->set_num_output(3);
  BlobProto* w = l->add_blobs();
  w->mutable_shape()->add_dim(3);
  w->mutable_shape()->add_dim(100);
  for (int i = 0; i < 300; ++i) w->add_data(0.5f * static_cast<float>(i) - 7.0f);
  return net;
}

TEST(ProtoIoText, ParsesValidText) {
  NetParameter net;
  read_text_proto_string("name: \"n\"\nlayer { name: \"r\" type: \"ReLU\" bottom: \"x\" }\n",
                         "mem.prototxt", &net);
  EXPECT_EQ(net.name(), "n");
  ASSERT_EQ(net.layer_size(), 1);
  EXPECT_EQ(net.layer(0).type(), "ReLU");
  EXPECT_EQ(net.layer(0).bottom(0), "x");
}

TEST(ProtoIoText, SyntaxErrorNamesFileLineAndColumn) {
  // Line 4 lacks the ':' a scalar field needs; the offending token "ReLU" starts in column 8.
  const std::string text =
      "name: \"x\"\n"
      "layer {\n"
      "  name: \"a\"\n"
      "  type \"ReLU\"\n"
      "}\n";
  const fs::path file = fresh_dir() / "bad.prototxt";
  spit(file, text);
  NetParameter net;
  const std::string msg = error_of([&] { read_text_proto(file.string(), &net); });
  EXPECT_EQ(msg.rfind(file.string() + ":4:8: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("Expected \":\""), std::string::npos) << msg;
}

TEST(ProtoIoText, UnknownFieldIsAnErrorWithLine) {
  const std::string text =
      "layer {\n"
      "  name: \"a\"\n"
      "  bogus_field: 3\n"
      "}\n";
  NetParameter net;
  const std::string msg = error_of([&] { read_text_proto_string(text, "net.prototxt", &net); });
  // Reported at the unknown name itself (line 3, column 3), not at the ':' after it.
  EXPECT_EQ(msg.rfind("net.prototxt:3:3: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("bogus_field"), std::string::npos) << msg;
}

// A negative number in an unsigned field: the parser's "Expected integer, got: -" becomes the
// field and the value, at the field.
TEST(ProtoIoText, NegativeUnsignedFieldNamesTheFieldAndValue) {
  const std::string text =
      "layer {\n"
      "  inner_product_param { num_output:   -3 }\n"
      "}\n";
  NetParameter net;
  EXPECT_EQ(error_of([&] { read_text_proto_string(text, "net.prototxt", &net); }),
            "net.prototxt:2:25: num_output takes a non-negative integer, got -3");
  // A signed field takes the negative number; range checks are the reader's (e.g. the solver's).
  SolverParameter solver;
  read_text_proto_string("snapshot: -1", "s", &solver);
  EXPECT_EQ(solver.snapshot(), -1);
}

TEST(ProtoIoText, ColumnsCountCharactersNotTabStops) {
  NetParameter net;
  const std::string msg =
      error_of([&] { read_text_proto_string("layer {\n\t\tbogus: 1\n}\n", "tab.prototxt", &net); });
  EXPECT_EQ(msg.rfind("tab.prototxt:2:3: ", 0), 0u) << msg;
}

TEST(ProtoIoText, MissingRequiredFieldIsAnError) {
  NetParameter net;
  const std::string msg = error_of(
      [&] { read_text_proto_string("layer { clip_param { min: 0 } }", "clip.prototxt", &net); });
  EXPECT_EQ(msg.rfind("clip.prototxt: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("max"), std::string::npos) << msg;
}

TEST(ProtoIoText, MissingFileNamesThePath) {
  const fs::path file = fresh_dir() / "does_not_exist.prototxt";
  NetParameter net;
  const std::string msg = error_of([&] { read_text_proto(file.string(), &net); });
  EXPECT_NE(msg.find(file.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file"), std::string::npos) << msg;
}

TEST(ProtoIoText, WriteThenReadRoundTrips) {
  const fs::path file = fresh_dir() / "net.prototxt";
  const NetParameter net = small_net();
  write_text_proto_atomic(net, file.string());
  NetParameter back;
  read_text_proto(file.string(), &back);
  EXPECT_EQ(back.SerializeAsString(), net.SerializeAsString());
  EXPECT_EQ(back.layer(0).blobs(0).data(299), 0.5f * 299 - 7.0f);
}

TEST(ProtoIoBinary, WriteThenReadRoundTrips) {
  const fs::path dir = fresh_dir();
  const fs::path file = dir / "w.caffemodel";
  const NetParameter net = small_net();
  write_binary_proto_atomic(net, file.string());
  EXPECT_EQ(entries(dir), std::vector<std::string>{"w.caffemodel"});  // no temp file left
  NetParameter back;
  read_binary_proto(file.string(), &back);
  ASSERT_EQ(back.layer_size(), 1);
  ASSERT_EQ(back.layer(0).blobs(0).data_size(), 300);
  EXPECT_EQ(back.layer(0).blobs(0).data(0), -7.0f);
  EXPECT_EQ(back.layer(0).blobs(0).data(123), 0.5f * 123 - 7.0f);
  EXPECT_EQ(back.layer(0).blobs(0).shape().dim(1), 100);
  EXPECT_EQ(back.SerializeAsString(), net.SerializeAsString());
}

TEST(ProtoIoBinary, TruncatedFileIsAnError) {
  const fs::path file = fresh_dir() / "cut.caffemodel";
  write_binary_proto_atomic(small_net(), file.string());
  const auto full = fs::file_size(file);
  ASSERT_GT(full, 1000u);
  fs::resize_file(file, full / 2);  // cuts the packed weight data in the middle
  NetParameter back;
  const std::string msg = error_of([&] { read_binary_proto(file.string(), &back); });
  EXPECT_EQ(msg, file.string() + ": not a valid NetParameter (truncated or corrupt)");
}

TEST(ProtoIoBinary, GarbageIsAnError) {
  const fs::path file = fresh_dir() / "junk.binaryproto";
  spit(file, std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11));
  BlobProto blob;
  const std::string msg = error_of([&] { read_binary_proto(file.string(), &blob); });
  EXPECT_EQ(msg, file.string() + ": not a valid BlobProto (truncated or corrupt)");
}

// The in-memory reader (database records, fuzz targets) parses and refuses as the file reader.
TEST(ProtoIoBinary, BytesInMemoryParseOrNameTheSource) {
  std::string bytes;
  ASSERT_TRUE(small_net().SerializeToString(&bytes));
  NetParameter back;
  read_binary_proto_bytes(bytes, "mem", &back);
  EXPECT_EQ(back.SerializeAsString(), bytes);
  const std::string cut = bytes.substr(0, bytes.size() / 2);
  EXPECT_EQ(error_of([&] { read_binary_proto_bytes(cut, "mem.caffemodel", &back); }),
            "mem.caffemodel: not a valid NetParameter (truncated or corrupt)");
}

TEST(ProtoIoBinary, FileOver2GiBIsAClearError) {
  const fs::path file = fresh_dir() / "huge.caffemodel";
  spit(file, "");
  fs::resize_file(file, (uintmax_t{1} << 31) + 16);  // sparse: takes no disk space
  NetParameter back;
  const std::string msg = error_of([&] { read_binary_proto(file.string(), &back); });
  EXPECT_NE(msg.find(file.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 GiB"), std::string::npos) << msg;
  fs::remove(file);
}

TEST(ProtoIoBinary, MissingFileNamesThePath) {
  const fs::path file = fresh_dir() / "nope.caffemodel";
  NetParameter back;
  const std::string msg = error_of([&] { read_binary_proto(file.string(), &back); });
  EXPECT_NE(msg.find(file.string()), std::string::npos) << msg;
}

TEST(ProtoIoAtomic, WriteIntoMissingDirectoryThrows) {
  const fs::path file = fresh_dir() / "no_such_dir" / "w.caffemodel";
  const std::string msg = error_of([&] { write_binary_proto_atomic(small_net(), file.string()); });
  EXPECT_NE(msg.find(file.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(file.parent_path()));
}

TEST(ProtoIoAtomic, FailedWriteKeepsTheExistingFile) {
  const fs::path dir = fresh_dir();
  const fs::path file = dir / "snap.solverstate";
  SolverState good;
  good.set_iter(1000);
  good.set_learned_net("snap_iter_1000.caffemodel");
  write_binary_proto_atomic(good, file.string());
  const std::string before = slurp(file);
  // A directory squatting on the temp file's name makes the write fail even for root (where a
  // read-only directory would not).
  const fs::path squatter = dir / ("snap.solverstate.tmp." + std::to_string(getpid()));
  fs::create_directory(squatter);
  SolverState next;
  next.set_iter(2000);
  const std::string msg = error_of([&] { write_binary_proto_atomic(next, file.string()); });
  EXPECT_NE(msg.find(file.string()), std::string::npos) << msg;
  EXPECT_EQ(slurp(file), before);
  SolverState back;
  read_binary_proto(file.string(), &back);
  EXPECT_EQ(back.iter(), 1000);
  fs::remove(squatter);
  // With the obstacle gone the same write succeeds and replaces the file.
  write_binary_proto_atomic(next, file.string());
  read_binary_proto(file.string(), &back);
  EXPECT_EQ(back.iter(), 2000);
  EXPECT_EQ(entries(dir), std::vector<std::string>{"snap.solverstate"});
}

TEST(ProtoIoAtomic, FailedRenameRemovesTheTempFile) {
  const fs::path dir = fresh_dir();
  // The target is a non-empty directory: the temp file is written, then rename fails.
  const fs::path target = dir / "model.caffemodel";
  fs::create_directory(target);
  spit(target / "keep", "x");
  const std::string msg = error_of([&] { write_text_proto_atomic(small_net(), target.string()); });
  EXPECT_NE(msg.find(target.string()), std::string::npos) << msg;
  EXPECT_EQ(entries(dir), std::vector<std::string>{"model.caffemodel"});
  EXPECT_EQ(slurp(target / "keep"), "x");
}

TEST(ProtoIoAtomic, UninitializedMessageIsRefused) {
  const fs::path dir = fresh_dir();
  NetParameter net;
  net.add_layer()->mutable_clip_param()->set_min(0.0f);  // required `max` unset
  const std::string msg =
      error_of([&] { write_binary_proto_atomic(net, (dir / "c.caffemodel").string()); });
  EXPECT_NE(msg.find("max"), std::string::npos) << msg;
  EXPECT_TRUE(entries(dir).empty());
}

}  // namespace
}  // namespace crema
