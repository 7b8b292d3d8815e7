// convert_imageset and compute_image_mean: LMDB round trips of raw, gray, resized and encoded
// images with Caffe's keys, the errors of bad lists, images and sizes, and the mean image
// against a hand computation.
#include "backends/convert_imageset.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "backends/image_mean.h"
#include "core/errors.h"
#include "core/rng.h"
#include "data/data_test_util.h"
#include "data/datum.h"
#include "data/image_io.h"
#include "data/image_test_util.h"
#include "data/lmdb_db.h"

namespace crema {
namespace {

using test::error_of;

using test::TempDir;

struct Record {
  std::string key;
  Datum datum;
};

std::vector<Record> read_all(const std::string& db) {
  LmdbReader reader(db);
  std::vector<Record> out(reader.size());
  for (Record& r : out) {
    r.key = reader.key();
    decode_datum(reader.value(), db, r.key, &r.datum);
    reader.next();
  }
  return out;
}

// Three PNG images: a.png 4x5, b.png 6x3, sub/c.png 4x5, labels 3, 1, 4.
std::string write_set(const TempDir& dir) {
  std::filesystem::create_directories(dir.file("sub"));
  test::write_test_image(dir.file("a.png"), 0, 4, 5);
  test::write_test_image(dir.file("b.png"), 1, 6, 3);
  test::write_test_image(dir.file("sub/c.png"), 2, 4, 5);
  test::write_text(dir.file("list.txt"), "a.png 3\nb.png 1\nsub/c.png 4\n");
  return dir.file("list.txt");
}

// The convert_imageset tests: each starts with write_set's images and list in a new directory.
class ConvertImageset : public ::testing::Test {
 protected:
  void SetUp() override {
    CREMA_SKIP_WITHOUT_OPENCV();
    list = write_set(dir);
  }

  TempDir dir;
  std::string list;
};

TEST_F(ConvertImageset, RawRoundTripWithCaffeKeys) {
  EXPECT_EQ(convert_imageset(dir.file(""), list, dir.file("db"), {}), 3u);
  const std::vector<Record> r = read_all(dir.file("db"));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].key, "00000000_a.png");
  EXPECT_EQ(r[1].key, "00000001_b.png");
  EXPECT_EQ(r[2].key, "00000002_sub/c.png");
  const int h[] = {4, 6, 4}, w[] = {5, 3, 5}, label[] = {3, 1, 4};
  for (int i = 0; i < 3; ++i) {
    const Datum& d = r[i].datum;
    EXPECT_FALSE(d.encoded());
    EXPECT_EQ(d.label(), label[i]);
    ASSERT_EQ(d.channels(), 3);
    ASSERT_EQ(d.height(), h[i]);
    ASSERT_EQ(d.width(), w[i]);
    for (int k = 0; k < 3; ++k)
      for (int y = 0; y < h[i]; ++y)
        for (int x = 0; x < w[i]; ++x)
          ASSERT_EQ(uint8_t(d.data()[(k * h[i] + y) * w[i] + x]), test::image_pixel(i, k, y, x));
  }
}

TEST_F(ConvertImageset, GrayResizeAndCheckSize) {
  ConvertImagesetOptions o;
  o.gray = true;
  o.resize_height = 7;
  o.resize_width = 2;
  o.check_size = true;
  convert_imageset(dir.file(""), list, dir.file("db"), o);
  for (const Record& r : read_all(dir.file("db"))) {
    EXPECT_EQ(r.datum.channels(), 1);
    EXPECT_EQ(r.datum.height(), 7);
    EXPECT_EQ(r.datum.width(), 2);
    EXPECT_EQ(r.datum.data().size(), 14u);
  }
  // Without the resize, --check_size refuses b.png and removes the partial output.
  o = {};
  o.check_size = true;
  const std::string msg =
      error_of([&] { convert_imageset(dir.file(""), list, dir.file("db2"), o); });
  EXPECT_NE(msg.find(list + ":2: " + dir.file("b.png") +
                     " is 3x6x3 but the first image is 3x4x5 (--check_size)"),
            std::string::npos)
      << msg;
  EXPECT_FALSE(std::filesystem::exists(dir.file("db2")));
}

TEST_F(ConvertImageset, EncodedKeepsTheFileOrReencodes) {
  ConvertImagesetOptions o;
  o.encoded = true;
  convert_imageset(dir.file(""), list, dir.file("db"), o);
  std::vector<Record> r = read_all(dir.file("db"));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(r[0].datum.encoded());
  EXPECT_EQ(r[0].datum.data(), read_file_bytes(dir.file("a.png")));  // stored as is
  ChwImage img;
  datum_to_chw(r[1].datum, "b", ColorMode::kNative, &img);
  EXPECT_EQ(img.channels * 100 + img.height * 10 + img.width, 363);
  EXPECT_EQ(img.data[5], float(test::image_pixel(1, 0, 1, 2)));  // PNG: lossless

  // Re-encoded as JPEG and resized.
  o.encode_type = "jpg";
  o.resize_height = 8;
  o.resize_width = 8;
  convert_imageset(dir.file(""), list, dir.file("db_jpg"), o);
  r = read_all(dir.file("db_jpg"));
  for (const Record& rec : r) {
    ASSERT_TRUE(rec.datum.encoded());
    ASSERT_GE(rec.datum.data().size(), 2u);
    EXPECT_EQ(uint8_t(rec.datum.data()[0]), 0xFF);  // the JPEG start-of-image marker
    EXPECT_EQ(uint8_t(rec.datum.data()[1]), 0xD8);
    datum_to_chw(rec.datum, rec.key, ColorMode::kNative, &img);
    EXPECT_EQ(img.channels * 100 + img.height * 10 + img.width, 388);
  }
}

TEST_F(ConvertImageset, ShuffleIsSeededAndKeysFollowTheNewOrder) {
  std::string text;
  for (int i = 0; i < 10; ++i) {
    test::write_test_image(dir.file("i" + std::to_string(i) + ".png"), i, 2, 2);
    text += "i" + std::to_string(i) + ".png " + std::to_string(i) + "\n";
  }
  test::write_text(list, text);  // in place of write_set's
  ConvertImagesetOptions o;
  o.shuffle = true;
  std::vector<std::string> keys[2];
  for (int run = 0; run < 2; ++run) {
    seed_thread_rng(3);
    const std::string db = dir.file("db" + std::to_string(run));
    convert_imageset(dir.file(""), list, db, o);
    for (const Record& r : read_all(db)) {
      keys[run].push_back(r.key);
      EXPECT_EQ(r.key.substr(9), "i" + std::to_string(r.datum.label()) + ".png");
    }
  }
  EXPECT_EQ(keys[0], keys[1]);
  std::vector<std::string> in_order;
  for (int i = 0; i < 10; ++i)
    in_order.push_back("0000000" + std::to_string(i) + "_i" + std::to_string(i) + ".png");
  EXPECT_NE(keys[0], in_order);
}

TEST_F(ConvertImageset, Errors) {
  // Nothing readable: an error, and no output left behind.
  test::write_text(dir.file("bad.txt"), "nope.png 1\n");
  std::string msg =
      error_of([&] { convert_imageset(dir.file(""), dir.file("bad.txt"), dir.file("db"), {}); });
  EXPECT_EQ(msg, dir.file("bad.txt") + ": none of the 1 images could be read");
  EXPECT_FALSE(std::filesystem::exists(dir.file("db")));
  std::filesystem::create_directories(dir.file("exists"));
  msg = error_of([&] { convert_imageset(dir.file(""), list, dir.file("exists"), {}); });
  EXPECT_NE(msg.find("exists: already exists"), std::string::npos) << msg;
  ConvertImagesetOptions o;
  o.resize_width = 4;
  msg = error_of([&] { convert_imageset(dir.file(""), list, dir.file("db"), o); });
  EXPECT_NE(msg.find("resize needs both"), std::string::npos) << msg;
  o = {};
  o.backend = "rocksdb";
  msg = error_of([&] { convert_imageset(dir.file(""), list, dir.file("db"), o); });
  EXPECT_NE(msg.find("unknown database backend \"rocksdb\""), std::string::npos) << msg;
  o = {};
  o.encoded = true;
  o.encode_type = "nosuchformat";
  msg = error_of([&] { convert_imageset(dir.file(""), list, dir.file("db"), o); });
  EXPECT_NE(msg.find("cannot encode the image as 'nosuchformat'"), std::string::npos) << msg;
}

// As Caffe: a missing or corrupt image is skipped with a warning; the others are converted.
TEST_F(ConvertImageset, UnreadableImagesAreSkipped) {
  test::write_text(dir.file("corrupt.jpg"), std::string("\xFF\xD8\xFF\xE0 truncated"));
  test::write_text(dir.file("mixed.txt"), "a.png 0\nnope.png 1\ncorrupt.jpg 2\nb.png 3\n");
  EXPECT_EQ(convert_imageset(dir.file(""), dir.file("mixed.txt"), dir.file("db"), {}), 2u);
  LmdbReader reader(dir.file("db"));
  EXPECT_EQ(reader.size(), 2u);
  EXPECT_EQ(std::string(reader.key()), "00000000_a.png");
  reader.next();
  EXPECT_EQ(std::string(reader.key()), "00000003_b.png");
}

TEST(ComputeImageMean, MatchesAHandComputation) {
  TempDir dir;
  const std::string db = dir.file("db");
  const int n = 5, c = 2, h = 2, w = 3;
  test::write_datum_lmdb(db, n, c, h, w);  // record i, pixel j: (i * 10 + j) % 256
  const ImageMean mean = compute_image_mean(db);
  EXPECT_EQ(mean.count, size_t(n));
  EXPECT_EQ(mean.blob.num(), 1);
  EXPECT_EQ(mean.blob.channels(), c);
  EXPECT_EQ(mean.blob.height(), h);
  EXPECT_EQ(mean.blob.width(), w);
  ASSERT_EQ(mean.blob.data_size(), c * h * w);
  for (int j = 0; j < c * h * w; ++j) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += (i * 10 + j) % 256;
    EXPECT_FLOAT_EQ(mean.blob.data(j), float(s / n)) << j;
  }
  ASSERT_EQ(mean.channel_means.size(), size_t(c));
  // Channel k averages pixels j = 6k .. 6k+5 over the records: mean of i*10 is 20, of j 2.5+6k.
  EXPECT_NEAR(mean.channel_means[0], 20 + 2.5, 1e-9);
  EXPECT_NEAR(mean.channel_means[1], 20 + 8.5, 1e-9);
}

TEST(ComputeImageMean, RecordsOfAnotherShapeAreAnError) {
  TempDir dir;
  const std::string db = dir.file("db");
  test::write_lmdb(db, 2, [](int i) {
    return std::pair(
        "k" + std::to_string(i),
        test::raw_datum(1, 1, i + 1, std::string(size_t(i + 1), 'x')).SerializeAsString());
  });
  const std::string msg = error_of([&] { compute_image_mean(db); });
  EXPECT_NE(msg.find(db + ": record 'k1': shape 1x1x2 differs from the first record's 1x1x1"),
            std::string::npos)
      << msg;
  EXPECT_NE(error_of([&] { compute_image_mean(dir.file("none")); }).find("cannot open LMDB"),
            std::string::npos);
}

}  // namespace
}  // namespace crema
