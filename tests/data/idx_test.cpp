// IDX reader: gzipped and raw files, truncated and malformed ones.
#include "data/idx.h"

#include <gtest/gtest.h>

#include "core/errors.h"
#include "data_test_util.h"

namespace crema {
namespace {

using test::idx_header;
using test::TempDir;
using test::write_bytes;

// Runs fn, expecting a crema::Error whose text contains every needle.
template <typename Fn>
void expect_error(Fn fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "'" << e.what() << "' lacks '" << n << "'";
  }
}

TEST(Idx, ReadsGzippedAndRawFiles) {
  TempDir dir;
  for (bool gz : {true, false}) {
    const std::string images = dir.file(gz ? "img.gz" : "img"),
                      labels = dir.file(gz ? "lab.gz" : "lab");
    test::write_idx_set(images, labels, 3, 2, 4, gz);
    const IdxArray img = read_idx_images(images);
    ASSERT_EQ(img.dims, (std::vector<uint32_t>{3, 2, 4}));
    ASSERT_EQ(img.data.size(), 24u);
    for (uint32_t i = 0; i < 3; ++i)
      for (uint32_t j = 0; j < 8; ++j) EXPECT_EQ(img.data[i * 8 + j], (i * 7 + j) % 256);
    const IdxArray lab = read_idx_labels(labels);
    ASSERT_EQ(lab.dims, (std::vector<uint32_t>{3}));
    EXPECT_EQ(lab.data, (std::vector<uint8_t>{0, 1, 2}));
  }
}

TEST(Idx, TruncatedGzipIsAnError) {
  TempDir dir;
  std::vector<uint8_t> bytes = idx_header(0x803, {5, 2, 2});
  bytes.resize(bytes.size() + 12, 9);  // 3 of the 5 images
  const std::string path = dir.file("short.gz");
  write_bytes(path, bytes, true);
  expect_error([&] { read_idx_images(path); }, {path, "truncated", "20 data bytes", "holds 12"});
}

TEST(Idx, TruncatedGzipStreamIsAnError) {
  TempDir dir;
  std::vector<uint8_t> bytes = idx_header(0x803, {50, 20, 20});
  for (int i = 0; i < 50 * 400; ++i) bytes.push_back(uint8_t(i * 31 % 251));
  const std::string full = dir.file("full.gz");
  write_bytes(full, bytes, true);
  ASSERT_EQ(read_idx_images(full).data.size(), 20000u);
  // Cut the compressed file in half: the gzip stream itself ends early.
  const auto size = std::filesystem::file_size(full);
  std::filesystem::resize_file(full, size / 2);
  expect_error([&] { read_idx_images(full); }, {full, "truncated"});
}

TEST(Idx, RawSizeMismatchIsAnError) {
  TempDir dir;
  std::vector<uint8_t> bytes = idx_header(0x801, {4});
  bytes.insert(bytes.end(), {1, 2, 3});
  const std::string path = dir.file("labels");
  write_bytes(path, bytes, false);
  expect_error([&] { read_idx_labels(path); }, {path, "12 bytes", "has 11"});
}

TEST(Idx, TrailingDataIsAnError) {
  TempDir dir;
  std::vector<uint8_t> bytes = idx_header(0x801, {2});
  bytes.insert(bytes.end(), {1, 2, 3});
  const std::string path = dir.file("labels.gz");
  write_bytes(path, bytes, true);
  expect_error([&] { read_idx_labels(path); }, {path, "after the 2 bytes"});
}

TEST(Idx, WrongMagicNamesBoth) {
  TempDir dir;
  const std::string images = dir.file("i.gz"), labels = dir.file("l.gz");
  test::write_idx_set(images, labels, 2, 2, 2, true);
  expect_error([&] { read_idx_images(labels); }, {labels, "0x00000801", "0x00000803"});
  expect_error([&] { read_idx_labels(images); }, {images, "magic"});
}

TEST(Idx, HugeSizesAreRefusedBeforeAllocation) {
  TempDir dir;
  const std::string path = dir.file("huge.gz");
  write_bytes(path, idx_header(0x803, {0xffffffffu, 0xffffffffu, 28}), true);
  expect_error([&] { read_idx_images(path); }, {path, "more than"});
}

TEST(Idx, MissingFileIsAnError) {
  expect_error([] { read_idx_images("/nonexistent/train-images.gz"); },
               {"/nonexistent/train-images.gz", "cannot open"});
}

}  // namespace
}  // namespace crema
