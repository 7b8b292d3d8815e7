// MNIST conversion: IDX -> LMDB of Datum round trip, bad inputs, and the tool's exit status.
#include "backends/convert_mnist.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "core/errors.h"
#include "data/data_test_util.h"
#include "data/lmdb_db.h"
#include "data/record_db.h"

namespace crema {
namespace {

using test::error_of;

using test::TempDir;

TEST(ConvertMnist, RoundTrip) {
  TempDir dir;
  const std::string images = dir.file("img.gz"), labels = dir.file("lab.gz");
  const std::string out = dir.file("out_lmdb");
  test::write_idx_set(images, labels, 12, 4, 3, true);
  EXPECT_EQ(convert_mnist(images, labels, out), 12u);
  EXPECT_TRUE(std::filesystem::exists(out + "/data.mdb"));
  LmdbReader reader(out);
  ASSERT_EQ(reader.size(), 12u);
  for (int i = 0; i < 12; ++i) {
    char key[16];
    std::snprintf(key, sizeof key, "%08d", i);
    ASSERT_EQ(reader.key(), key);
    Datum d;
    ASSERT_TRUE(d.ParseFromArray(reader.value().data(), int(reader.value().size())));
    EXPECT_EQ(d.channels(), 1);
    EXPECT_EQ(d.height(), 4);
    EXPECT_EQ(d.width(), 3);
    EXPECT_EQ(d.label(), i % 10);
    ASSERT_EQ(d.data().size(), 12u);
    for (int j = 0; j < 12; ++j) EXPECT_EQ(uint8_t(d.data()[j]), (i * 7 + j) % 256);
    reader.next();
  }
}

TEST(ConvertMnist, BadInputs) {
  TempDir dir;
  const std::string images = dir.file("img"), labels = dir.file("lab");
  test::write_idx_set(images, labels, 3, 2, 2, false);
  const std::string short_labels = dir.file("lab2.gz");
  test::write_bytes(short_labels, test::idx_header(0x801, {2}), true);
  std::vector<uint8_t> two = test::idx_header(0x801, {2});
  two.insert(two.end(), {1, 2});
  test::write_bytes(short_labels, two, true);
  EXPECT_EQ(error_of([&] { convert_mnist(images, short_labels, dir.file("o1")); }),
            short_labels + ": holds 2 labels but " + images + " holds 3 images");
  EXPECT_FALSE(std::filesystem::exists(dir.file("o1")));  // nothing written on bad input
  EXPECT_NE(error_of([&] { convert_mnist(labels, images, dir.file("o2")); }).find("magic"),
            std::string::npos);
  std::filesystem::create_directory(dir.file("taken"));
  EXPECT_EQ(error_of([&] { convert_mnist(images, labels, dir.file("taken")); }),
            dir.file("taken") + ": already exists; remove it or choose another output");
}

// Runs a shell command; returns its exit status and its stderr.
std::pair<int, std::string> shell(const std::string& cmd, const std::string& err_file) {
  const int rc = std::system((cmd + " 2>" + err_file).c_str());
  std::ifstream in(err_file);
  std::stringstream ss;
  ss << in.rdbuf();
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ss.str()};
}

TEST(ConvertMnistTool, MissingInputExitsNonZeroWithOneLine) {
  const std::string tool = CREMA_BINARY_DIR "/convert_mnist";
  if (!std::filesystem::exists(tool)) GTEST_SKIP() << tool << " is not built";
  TempDir dir;
  const std::string err = dir.file("err");
  auto [rc, text] = shell(tool + " /nonexistent/img.gz /nonexistent/lab.gz " + dir.file("o"), err);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(text, "convert_mnist: /nonexistent/img.gz: cannot open: No such file or directory\n");
  EXPECT_FALSE(std::filesystem::exists(dir.file("o")));

  std::tie(rc, text) = shell(tool + " only_one_arg", err);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(text.find("usage: convert_mnist"), std::string::npos);
  std::tie(rc, text) = shell(tool + " --help >/dev/null", err);
  EXPECT_EQ(rc, 0);

  const std::string images = dir.file("i.gz"), labels = dir.file("l.gz");
  test::write_idx_set(images, labels, 5, 28, 28, true);
  std::tie(rc, text) = shell(
      tool + " " + images + " " + labels + " " + dir.file("ok") + " --backend=lmdb >/dev/null",
      err);
  EXPECT_EQ(rc, 0) << text;
  EXPECT_EQ(LmdbReader(dir.file("ok")).size(), 5u);
  // Caffe's other backend, where this build has it; an unknown one is one line.
  if (leveldb_available()) {
    std::tie(rc, text) = shell(tool + " " + images + " " + labels + " " + dir.file("ok_leveldb") +
                                   " --backend=leveldb >/dev/null",
                               err);
    EXPECT_EQ(rc, 0) << text;
    const auto reader = open_record_reader(dir.file("ok_leveldb"), RecordBackend::kLevelDb);
    EXPECT_EQ(reader->size(), 5u);
    EXPECT_EQ(reader->key(), "00000000");
  }
  std::tie(rc, text) =
      shell(tool + " " + images + " " + labels + " " + dir.file("no") + " --backend=rocksdb", err);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(text, "convert_mnist: unknown database backend \"rocksdb\" (lmdb or leveldb)\n");
}

}  // namespace
}  // namespace crema
