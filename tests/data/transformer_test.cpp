// DataTransformer: scale, means, crops and mirrors against hand-computed values.
#include "data/transformer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <numeric>
#include <set>

#include "core/errors.h"
#include "data_test_util.h"

namespace crema {
namespace {

using test::error_of;

using test::TempDir;

std::vector<float> iota(size_t n, float start = 0) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// Transforms `in` as example number `record`.
std::vector<float> run(const DataTransformer& t, const std::vector<float>& in, int c, int h, int w,
                       uint64_t record = 0) {
  const std::vector<int> s = t.output_shape(c, h, w);
  std::vector<float> out(size_t(s[0]) * s[1] * s[2], -12345.f);
  t.transform(in.data(), c, h, w, out.data(), record);
  return out;
}

// Writes a 1 x c x h x w mean image with values start, start + 1, ...
void write_mean(const std::string& path, int c, int h, int w, float start) {
  BlobProto blob;
  for (int d : {1, c, h, w}) blob.mutable_shape()->add_dim(d);
  for (float v : iota(size_t(c) * h * w, start)) blob.add_data(v);
  std::ofstream out(path, std::ios::binary);
  ASSERT_TRUE(blob.SerializeToOstream(&out));
}

TEST(Transformer, Scale) {
  TransformationParameter p;
  p.set_scale(0.5f);
  DataTransformer t(p, TRAIN, 1);
  EXPECT_EQ(t.output_shape(2, 2, 3), (std::vector<int>{2, 2, 3}));
  const std::vector<float> out = run(t, iota(12), 2, 2, 3);
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(out[i], 0.5f * i);
}

TEST(Transformer, MeanValues) {
  TransformationParameter p;
  p.add_mean_value(3);
  p.set_scale(2);
  DataTransformer one(p, TEST, 1);
  std::vector<float> out = run(one, iota(8), 2, 2, 2);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(out[i], (float(i) - 3) * 2);

  p.add_mean_value(5);
  DataTransformer per_channel(p, TEST, 1);
  out = run(per_channel, iota(8), 2, 2, 2);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(out[i], (float(i) - (i < 4 ? 3 : 5)) * 2);
  EXPECT_EQ(error_of([&] { per_channel.output_shape(3, 2, 2); }),
            "transform_param.mean_value is given 2 times but the input has 3 channels: give one "
            "value or one per channel");
}

TEST(Transformer, MeanFile) {
  TempDir dir;
  const std::string mean = dir.file("mean.binaryproto");
  write_mean(mean, 2, 2, 3, 100);
  TransformationParameter p;
  p.set_mean_file(mean);
  p.set_scale(0.25f);
  DataTransformer t(p, TRAIN, 1);
  const std::vector<float> in = iota(12, 500);
  const std::vector<float> out = run(t, in, 2, 2, 3);
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(out[i], (in[i] - (100 + float(i))) * 0.25f);

  p.add_mean_value(1);
  EXPECT_EQ(error_of([&] { DataTransformer both(p, TRAIN, 1); }),
            "transform_param: give either mean_file or mean_value, not both");
}

TEST(Transformer, MeanFileOfTheWrongShape) {
  TempDir dir;
  const std::string mean = dir.file("mean.binaryproto");
  write_mean(mean, 3, 4, 4, 0);
  TransformationParameter p;
  p.set_mean_file(mean);
  DataTransformer t(p, TRAIN, 1);
  EXPECT_EQ(error_of([&] { t.output_shape(1, 4, 4); }),
            mean +
                ": mean image has shape 3x4x4 but the data has shape 1x4x4; the channels must "
                "match and the size must equal the data's");
  EXPECT_NE(error_of([&] { t.output_shape(3, 5, 5); }).find("3x4x4 but the data has shape 3x5x5"),
            std::string::npos);
  p.set_crop_size(5);
  DataTransformer crop(p, TRAIN, 1);
  EXPECT_NE(error_of([&] { crop.output_shape(3, 6, 6); }).find("with crop_size 5"),
            std::string::npos);

  std::ofstream(dir.file("bad.binaryproto")) << "\xff\xff\xff";
  p.set_mean_file(dir.file("bad.binaryproto"));
  EXPECT_NE(error_of([&] { DataTransformer bad(p, TRAIN, 1); }).find(dir.file("bad.binaryproto")),
            std::string::npos);
}

TEST(Transformer, CenterCropInTest) {
  TransformationParameter p;
  p.set_crop_size(3);
  DataTransformer t(p, TEST, 7);
  EXPECT_EQ(t.output_shape(1, 5, 6), (std::vector<int>{1, 3, 3}));
  // 5 x 6 input: offsets (1, 1).
  for (int rep = 0; rep < 5; ++rep)
    EXPECT_EQ(run(t, iota(30), 1, 5, 6), (std::vector<float>{7, 8, 9, 13, 14, 15, 19, 20, 21}));
  EXPECT_NE(error_of([&] { t.output_shape(1, 2, 6); }).find("crop_size 3 is larger"),
            std::string::npos);
}

// As in Caffe, mirror applies in TEST too: the center crop is fixed, the flip is a coin toss.
TEST(Transformer, MirrorAppliesInTestWithACenteredCrop) {
  TransformationParameter p;
  p.set_crop_size(3);
  p.set_mirror(true);
  DataTransformer t(p, TEST, 7);
  const std::vector<float> plain = {7, 8, 9, 13, 14, 15, 19, 20, 21};
  const std::vector<float> flipped = {9, 8, 7, 15, 14, 13, 21, 20, 19};
  int n_plain = 0, n_flipped = 0;
  for (int rep = 0; rep < 40; ++rep) {
    const std::vector<float> out = run(t, iota(30), 1, 5, 6, uint64_t(rep));
    n_plain += out == plain;
    n_flipped += out == flipped;
  }
  EXPECT_EQ(n_plain + n_flipped, 40);
  EXPECT_GT(n_plain, 5);
  EXPECT_GT(n_flipped, 5);
}

TEST(Transformer, CropWithALargerMeanUsesItsCenter) {
  TempDir dir;
  const std::string mean = dir.file("mean.binaryproto");
  write_mean(mean, 1, 4, 4, 0);  // 4x4 mean, 3x3 data, crop 2
  TransformationParameter p;
  p.set_mean_file(mean);
  p.set_crop_size(2);
  DataTransformer t(p, TEST, 1);
  // Data window at (0, 0) of the 3x3 data; mean window at (1, 1) of the 4x4 mean.
  EXPECT_EQ(run(t, iota(9, 100), 1, 3, 3),
            (std::vector<float>{100 - 5, 101 - 6, 103 - 9, 104 - 10}));
}

TEST(Transformer, RandomCropAndMirrorInTrainAreSeeded) {
  TransformationParameter p;
  p.set_crop_size(2);
  p.set_mirror(true);
  const int h = 4, w = 5;
  const std::vector<float> in = iota(2 * h * w);
  DataTransformer a(p, TRAIN, 42), b(p, TRAIN, 42), c(p, TRAIN, 43);
  std::set<std::pair<int, int>> offsets;
  int mirrored = 0, plain = 0;
  bool differs = false;
  for (int rep = 0; rep < 60; ++rep) {
    const std::vector<float> oa = run(a, in, 2, h, w, uint64_t(rep));
    EXPECT_EQ(oa, run(b, in, 2, h, w, uint64_t(rep)));
    // Each example's draw is its own: asking again, or after other examples, gives it back.
    EXPECT_EQ(oa, run(a, in, 2, h, w, uint64_t(rep)));
    differs |= oa != run(c, in, 2, h, w, uint64_t(rep));
    // Identify the window from the top-left pixels: plain x0 < x1, mirrored x0 > x1.
    const int y0 = int(oa[0]) / w;
    const bool m = oa[0] > oa[1];
    const int x0 = (int(m ? oa[1] : oa[0])) % w;
    (m ? mirrored : plain)++;
    offsets.insert({y0, x0});
    for (int ch = 0; ch < 2; ++ch)
      for (int y = 0; y < 2; ++y)
        for (int x = 0; x < 2; ++x) {
          const int sx = m ? 1 - x : x;
          EXPECT_EQ(oa[(ch * 2 + y) * 2 + x], in[(ch * h + y0 + y) * w + x0 + sx]);
        }
  }
  EXPECT_TRUE(differs);
  EXPECT_GT(mirrored, 10);
  EXPECT_GT(plain, 10);
  EXPECT_EQ(offsets.size(), size_t((h - 1) * (w - 1)));  // every window position was drawn
}

}  // namespace
}  // namespace crema
