// The data layers on the engine: any number of decode workers gives the batches of one worker,
// bit for bit, for the same seed -- random crops and flips, rand_skip, a shuffled image list,
// over several epochs and across a resume taken with another worker count. Bad records reach
// forward() as one error naming the DB and key (or list line), and a layer destroyed with
// batches in flight goes promptly.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/errors.h"
#include "core/rng.h"
#include "data/data_test_util.h"
#include "data/image_test_util.h"
#include "data/jpeg_codec.h"
#include "layers/data_layer.h"
#include "layers/image_data_layer.h"

namespace crema {
namespace {

using test::TempDir;

// A 3 x h x w test image whose pixels depend on i, as JPEG bytes.
std::string test_jpeg(int i, int h, int w) {
  std::vector<unsigned char> chw(size_t(3) * h * w);
  for (int k = 0; k < 3; ++k)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) chw[(size_t(k) * h + y) * w + x] = test::image_pixel(i, k, y, x);
  return encode_jpeg(chw.data(), 3, h, w, 90);
}

// An LMDB of n encoded JPEG Datums, label i; record `corrupt` (if any) holds bytes that are not
// an image.
void write_jpeg_lmdb(const std::string& path, int n, int h, int w, int corrupt = -1) {
  test::write_lmdb(path, n, [&](int i) {
    Datum d;
    d.set_label(i);
    d.set_encoded(true);
    d.set_data(i == corrupt ? std::string("\xFF\xD8\xFF not really a jpeg") : test_jpeg(i, h, w));
    return std::pair(test::record_key(i), d.SerializeAsString());
  });
}

LayerParameter data_param(const std::string& db, int batch, uint32_t threads) {
  LayerParameter p;
  p.set_name("data");
  p.set_type("Data");
  p.set_phase(TRAIN);
  p.mutable_data_param()->set_source(db);
  p.mutable_data_param()->set_batch_size(uint32_t(batch));
  p.mutable_data_param()->set_backend(DataParameter::LMDB);
  p.mutable_data_param()->set_threads(threads);
  p.mutable_data_param()->set_prefetch(3);
  p.mutable_transform_param()->set_crop_size(5);
  p.mutable_transform_param()->set_mirror(true);
  p.mutable_transform_param()->add_mean_value(100);
  return p;
}

// The data and labels of `batches` forwards of a layer of p set up under seed 11, after
// `restore` (when given) has been restored into it.
template <typename L>
std::vector<float> run_layer(const LayerParameter& p, int batches,
                             const DataReaderState* restore = nullptr,
                             DataReaderState* state_after = nullptr) {
  seed_thread_rng(11);
  test::SourceRun<L> run(p);
  if (restore) run.layer.restore_reader_state(*restore);
  const std::vector<float> out = run.batches(batches);
  if (state_after) {
    EXPECT_TRUE(run.layer.reader_state(state_after));
  }
  return out;
}

TEST(ParallelDecode, DataLayerBatchesAreTheSameForAnyWorkerCount) {
  CREMA_SKIP_WITHOUT_JPEG();
  TempDir dir;
  write_jpeg_lmdb(dir.file("db"), 13, 9, 11);
  LayerParameter p = data_param(dir.file("db"), 4, 1);
  p.mutable_data_param()->set_rand_skip(6);
  // 10 batches of 4 over 13 records: three epochs and a wrap in the middle of a batch.
  const std::vector<float> one = run_layer<DataLayer<float>>(p, 10);
  ASSERT_EQ(one.size(), size_t(10 * (4 * 3 * 5 * 5 + 4)));
  for (uint32_t workers : {2u, 3u, 7u}) {
    p.mutable_data_param()->set_threads(workers);
    EXPECT_EQ(run_layer<DataLayer<float>>(p, 10), one) << workers << " workers";
  }
  // The crops and flips are random: a run under another seed differs (the test can fail).
  seed_thread_rng(12);
  p.mutable_data_param()->set_threads(1);
  DataLayer<float> other(p, Device::kCPU);
  Tensor<float> data, label;
  other.setup({}, {&data, &label});
  Handle h;
  other.forward(h, {}, {&data, &label});
  const std::vector<float> first(one.begin(), one.begin() + long(data.count()));
  EXPECT_NE(data.data_vector(), first);
}

TEST(ParallelDecode, RawDatumsAcrossAResumeWithAnotherWorkerCount) {
  TempDir dir;
  test::write_datum_lmdb(dir.file("db"), 10, 2, 7, 8);
  LayerParameter p = data_param(dir.file("db"), 3, 4);
  p.mutable_data_param()->set_rand_skip(5);
  const std::vector<float> whole = run_layer<DataLayer<float>>(p, 9);
  DataReaderState state;
  const std::vector<float> before = run_layer<DataLayer<float>>(p, 4, nullptr, &state);
  p.mutable_data_param()->set_threads(1);
  const std::vector<float> after = run_layer<DataLayer<float>>(p, 5, &state);
  std::vector<float> joined = before;
  joined.insert(joined.end(), after.begin(), after.end());
  EXPECT_EQ(joined, whole);
}

TEST(ParallelDecode, ShuffledImageListIsTheSameForAnyWorkerCount) {
  CREMA_SKIP_WITHOUT_JPEG();
  TempDir dir;
  std::string list;
  for (int i = 0; i < 7; ++i) {
    const std::string name = "img" + std::to_string(i) + ".jpg";
    test::write_text(dir.file(name), test_jpeg(i, 8, 9));
    list += name + " " + std::to_string(i) + "\n";
  }
  test::write_text(dir.file("list.txt"), list);
  LayerParameter p;
  p.set_name("img");
  p.set_type("ImageData");
  p.set_phase(TRAIN);
  ImageDataParameter* ip = p.mutable_image_data_param();
  ip->set_source(dir.file("list.txt"));
  ip->set_root_folder(dir.file(""));
  ip->set_batch_size(3);
  ip->set_shuffle(true);
  ip->set_rand_skip(4);
  ip->set_threads(1);
  p.mutable_transform_param()->set_crop_size(6);
  p.mutable_transform_param()->set_mirror(true);
  // 8 batches of 3 over 7 images: four shuffled epochs.
  const std::vector<float> one = run_layer<ImageDataLayer<float>>(p, 8);
  ip->set_threads(4);
  EXPECT_EQ(run_layer<ImageDataLayer<float>>(p, 8), one);
  // And across a resume taken by the 4-worker layer, continued by a 2-worker one.
  DataReaderState state;
  std::vector<float> joined = run_layer<ImageDataLayer<float>>(p, 3, nullptr, &state);
  ip->set_threads(2);
  const std::vector<float> after = run_layer<ImageDataLayer<float>>(p, 5, &state);
  joined.insert(joined.end(), after.begin(), after.end());
  EXPECT_EQ(joined, one);
}

TEST(ParallelDecode, ACorruptRecordIsOneErrorAfterTheGoodBatches) {
  CREMA_SKIP_WITHOUT_JPEG();
  TempDir dir;
  write_jpeg_lmdb(dir.file("db"), 12, 9, 11, /*corrupt=*/9);
  const LayerParameter p = data_param(dir.file("db"), 4, 3);
  seed_thread_rng(1);
  test::SourceRun<DataLayer<float>> run(p);
  run.batches(2);
  const std::string err = test::error_of([&] { run.forward(); });
  EXPECT_NE(err.find("layer data (Data): " + dir.file("db") + ": record '00000009': "),
            std::string::npos)
      << err;
  // Asked again, the same error: the layer never hangs after a failure.
  EXPECT_EQ(test::error_of([&] { run.forward(); }), err);
}

TEST(ParallelDecode, AShapeUnlikeTheFirstNamesTheRecord) {
  TempDir dir;
  test::write_lmdb(dir.file("db"), 6, [](int i) {
    const int c = i == 4 ? 1 : 3;  // a gray record among color ones
    return std::pair(
        "k" + std::to_string(i),
        test::raw_datum(c, 6, 6, std::string(size_t(c * 36), char(i))).SerializeAsString());
  });
  test::SourceRun<DataLayer<float>> run(data_param(dir.file("db"), 2, 2));
  run.batches(2);
  EXPECT_EQ(test::error_of([&] { run.forward(); }),
            "layer data (Data): " + dir.file("db") +
                ": record 'k4': shape 1x6x6 differs from the first record's 3x6x6; every record "
                "must have the same shape");
}

TEST(ParallelDecode, ALayerGoesPromptlyWithBatchesInFlight) {
  TempDir dir;
  test::write_datum_lmdb(dir.file("db"), 50, 3, 32, 32);
  LayerParameter p = data_param(dir.file("db"), 8, 3);
  p.mutable_data_param()->set_prefetch(6);
  for (int forwards : {0, 1, 3}) {
    DataLayer<float> layer(p, Device::kCPU);
    Tensor<float> data, label;
    layer.setup({}, {&data, &label});
    Handle h;
    for (int i = 0; i < forwards; ++i) layer.forward(h, {}, {&data, &label});
    EXPECT_EQ(data.shape()[0], 8);
  }
}

TEST(ParallelDecode, TooManyThreadsIsAnError) {
  TempDir dir;
  test::write_datum_lmdb(dir.file("db"), 4, 1, 6, 6);
  LayerParameter p = data_param(dir.file("db"), 2, 5000);
  DataLayer<float> layer(p, Device::kCPU);
  Tensor<float> data, label;
  EXPECT_EQ(test::error_of([&] {
              layer.setup({}, {&data, &label});
            }),
            "layer data (Data): the layer's threads must be at most 1024 (0: from the machine's "
            "cores); got 5000");
}

}  // namespace
}  // namespace crema
