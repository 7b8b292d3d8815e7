// Data layer: batches in key order with wrap-around, labels, transforms, seeded randomness,
// thread shutdown, and the errors of missing, corrupt and unsupported databases.
#include "layers/data_layer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>

#include "core/errors.h"
#include "core/replica.h"
#include "core/rng.h"
#include "data/image_io.h"
#include "data/jpeg_codec.h"
#include "data/record_db.h"
#include "data/transformer.h"
#include "data_test_util.h"

namespace crema {
namespace {

using test::error_of;

using test::TempDir;

LayerParameter data_param(const std::string& source, int batch, Phase phase = TEST) {
  LayerParameter p;
  p.set_name("data");
  p.set_type("Data");
  p.set_phase(phase);
  p.mutable_data_param()->set_source(source);
  p.mutable_data_param()->set_batch_size(batch);
  p.mutable_data_param()->set_backend(DataParameter::LMDB);
  return p;
}

// Value of pixel j of record i, as test::write_datum_lmdb writes them.
float pixel(int i, int j) { return float((i * 10 + j) % 256); }

TEST(DataLayer, BatchesWrapAroundWithLabelsInOrder) {
  TempDir dir;
  const std::string db = dir.file("db");
  test::write_datum_lmdb(db, 10, 2, 2, 3);
  DataLayer<float> layer(data_param(db, 4), Device::kCPU);
  Tensor<float> data, label;
  layer.setup({}, {&data, &label});
  EXPECT_EQ(data.shape(), (std::vector<int64_t>{4, 2, 2, 3}));
  EXPECT_EQ(label.shape(), (std::vector<int64_t>{4}));
  Handle h;
  int next = 0;
  for (int iter = 0; iter < 6; ++iter) {  // 24 records: two passes and a bit
    layer.forward(h, {}, {&data, &label});
    const std::vector<float> d = data.data_vector(), l = label.data_vector();
    for (int n = 0; n < 4; ++n, next = (next + 1) % 10) {
      ASSERT_EQ(l[n], float(next)) << "iteration " << iter << " item " << n;
      for (int j = 0; j < 12; ++j) ASSERT_EQ(d[n * 12 + j], pixel(next, j));
    }
  }
}

// Data-parallel replicas: in TRAIN, counting from the first record read, record i goes to replica
// i mod count (wrapping around the database keeps counting); TEST ignores the replica.
TEST(DataLayer, ReplicaKeepsItsShareOfTheRecords) {
  TempDir dir;
  const std::string db = dir.file("db");
  test::write_datum_lmdb(db, 10, 1, 1, 2);
  set_this_replica({1, 3});  // what the layers see at setup
  DataLayer<float> train(data_param(db, 4, TRAIN), Device::kCPU);
  DataLayer<float> test(data_param(db, 4, TEST), Device::kCPU);
  Tensor<float> data, label;
  train.setup({}, {&data, &label});
  Tensor<float> test_data, test_label;
  test.setup({}, {&test_data, &test_label});
  set_this_replica({});
  Handle h;
  for (int iter = 0, k = 0; iter < 4; ++iter) {  // 16 examples of 48 records read: 4 passes
    train.forward(h, {}, {&data, &label});
    for (float l : label.data_vector()) ASSERT_EQ(l, float((1 + 3 * k++) % 10)) << "example " << k;
  }
  test.forward(h, {}, {&test_data, &test_label});
  EXPECT_EQ(test_label.data_vector(), (std::vector<float>{0, 1, 2, 3}));
}

TEST(DataLayer, TransformsAndDataOnlyTop) {
  TempDir dir;
  const std::string db = dir.file("db");
  test::write_datum_lmdb(db, 3, 1, 4, 4);
  LayerParameter p = data_param(db, 2);
  p.mutable_transform_param()->set_crop_size(2);
  p.mutable_transform_param()->set_scale(0.5f);
  p.mutable_transform_param()->add_mean_value(1);
  DataLayer<double> layer(p, Device::kCPU);
  Tensor<double> data;
  layer.setup({}, {&data});
  ASSERT_EQ(data.shape(), (std::vector<int64_t>{2, 1, 2, 2}));
  Handle h;
  layer.forward(h, {}, {&data});
  const std::vector<double> d = data.data_vector();
  // Center crop at (1, 1) of 4x4: pixels 5, 6, 9, 10.
  for (int n = 0; n < 2; ++n) {
    const int js[] = {5, 6, 9, 10};
    for (int k = 0; k < 4; ++k) EXPECT_EQ(d[n * 4 + k], (pixel(n, js[k]) - 1) * 0.5);
  }
}

std::vector<float> train_batches(const std::string& db, int64_t seed) {
  seed_thread_rng(seed);
  LayerParameter p = data_param(db, 5, TRAIN);
  p.mutable_transform_param()->set_crop_size(3);
  p.mutable_transform_param()->set_mirror(true);
  DataLayer<float> layer(p, Device::kCPU);
  Tensor<float> data, label;
  layer.setup({}, {&data, &label});
  Handle h;
  std::vector<float> all;
  for (int i = 0; i < 4; ++i) {
    layer.forward(h, {}, {&data, &label});
    for (float v : data.data_vector()) all.push_back(v);
  }
  return all;
}

TEST(DataLayer, TrainRandomnessFollowsTheSeed) {
  TempDir dir;
  const std::string db = dir.file("db");
  test::write_datum_lmdb(db, 7, 1, 5, 5);
  const std::vector<float> a = train_batches(db, 1), b = train_batches(db, 1);
  const std::vector<float> c = train_batches(db, 2);
  ASSERT_EQ(a.size(), 20u * 9);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(DataLayer, ShutsDownItsThreadPromptly) {
  TempDir dir;
  const std::string db = dir.file("db");
  test::write_datum_lmdb(db, 10, 1, 8, 8);
  Handle h;
  for (int forwards : {0, 1, 3}) {
    const auto start = std::chrono::steady_clock::now();
    {
      LayerParameter p = data_param(db, 4);
      p.mutable_data_param()->set_prefetch(2);
      DataLayer<float> layer(p, Device::kCPU);
      Tensor<float> data, label;
      layer.setup({}, {&data, &label});
      for (int i = 0; i < forwards; ++i) layer.forward(h, {}, {&data, &label});
      if (forwards > 0) {
        EXPECT_EQ(label.data_vector()[0], float((forwards - 1) * 4 % 10));
      }
    }  // the destructor joins a thread blocked on a full queue
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }
}

TEST(DataLayer, MissingLmdbIsAnError) {
  DataLayer<float> layer(data_param("/nonexistent/train_lmdb", 4), Device::kCPU);
  Tensor<float> data;
  EXPECT_EQ(error_of([&] { layer.setup({}, {&data}); }),
            "layer data (Data): /nonexistent/train_lmdb: cannot open LMDB: No such file or "
            "directory");
}

TEST(DataLayer, GarbageFileIsAnError) {
  TempDir dir;
  const std::string path = dir.file("garbage_lmdb");
  std::ofstream(path) << std::string(5000, '\x5a');
  DataLayer<float> layer(data_param(path, 4), Device::kCPU);
  Tensor<float> data;
  const std::string msg = error_of([&] { layer.setup({}, {&data}); });
  EXPECT_EQ(msg.rfind("layer data (Data): " + path + ": cannot open LMDB: ", 0), 0u) << msg;
}

TEST(DataLayer, CorruptRecordIsThrownByForward) {
  TempDir dir;
  const std::string db = dir.file("db");
  test::write_lmdb(db, 10, [](int i) {
    const Datum d = test::raw_datum(1, 1, 2, std::string(2, char(i)), i);
    return std::pair(test::record_key(i),
                     i == 5 ? std::string("\xff\xff\xff\xff", 4) : d.SerializeAsString());
  });
  DataLayer<float> layer(data_param(db, 4), Device::kCPU);
  Tensor<float> data, label;
  layer.setup({}, {&data, &label});
  Handle h;
  layer.forward(h, {}, {&data, &label});  // records 0-3 are fine
  EXPECT_EQ(label.data_vector(), (std::vector<float>{0, 1, 2, 3}));
  const std::string msg = error_of([&] { layer.forward(h, {}, {&data, &label}); });
  EXPECT_EQ(msg.rfind("layer data (Data): " + db + ": record '00000005': corrupt Datum", 0), 0u)
      << msg;
  // The error stays: the next forward reports it again instead of hanging.
  EXPECT_NE(error_of([&] {
              layer.forward(h, {}, {&data, &label});
            }).find("00000005"),
            std::string::npos);
}

TEST(DataLayer, RecordOfAnotherShapeIsAnError) {
  TempDir dir;
  const std::string db = dir.file("db");
  test::write_lmdb(db, 3, [](int i) {
    const int w = i == 2 ? 3 : 2;
    return std::pair(std::to_string(i),
                     test::raw_datum(1, 1, w, std::string(size_t(w), 'a')).SerializeAsString());
  });
  DataLayer<float> layer(data_param(db, 3), Device::kCPU);
  Tensor<float> data;
  layer.setup({}, {&data});
  Handle h;
  EXPECT_NE(error_of([&] {
              layer.forward(h, {}, {&data});
            }).find("record '2': shape 1x1x3 differs from the first record's 1x1x2"),
            std::string::npos);
}

TEST(DataLayer, ParameterErrors) {
  TempDir dir;
  const std::string db = dir.file("db");
  test::write_datum_lmdb(db, 2, 1, 2, 2);
  Tensor<float> data;
  LayerParameter p = data_param(db, 4);
  // An LMDB named a LevelDB is not one.
  p.mutable_data_param()->set_backend(DataParameter::LEVELDB);
  EXPECT_NE(error_of([&] {
              DataLayer<float>(p, Device::kCPU).setup({}, {&data});
            }).find(leveldb_available() ? db + ": cannot open LevelDB" : "reads no LevelDB"),
            std::string::npos);
  p = data_param(db, 0);
  EXPECT_EQ(error_of([&] { DataLayer<float>(p, Device::kCPU).setup({}, {&data}); }),
            "layer data (Data): data_param.batch_size must be positive");
  p = data_param(db, 2);
  p.mutable_transform_param()->set_crop_size(3);
  EXPECT_NE(error_of([&] {
              DataLayer<float>(p, Device::kCPU).setup({}, {&data});
            }).find("crop_size 3 is larger than the input 1x2x2"),
            std::string::npos);
  // Without an explicit backend an LMDB is still read (Caffe's default says LEVELDB).
  p = data_param(db, 2);
  p.mutable_data_param()->clear_backend();
  DataLayer<float> layer(p, Device::kCPU);
  layer.setup({}, {&data});
  EXPECT_EQ(data.shape(), (std::vector<int64_t>{2, 1, 2, 2}));
}

// Where JPEGs are decoded: AUTO is the CPU on a CPU layer; GPU there is a clear error.
TEST(DataLayer, JpegDecoderChoice) {
  CREMA_SKIP_WITHOUT_JPEG();
  TempDir dir;
  const std::string db = dir.file("db");
  test::write_jpeg_lmdb(db, 3, 3, 12, 16);
  Tensor<float> data;
  LayerParameter p = data_param(db, 2);
  DataLayer<float> layer(p, Device::kCPU);
  layer.setup({}, {&data});
  EXPECT_FALSE(layer.gpu_decodes());
  p.mutable_data_param()->set_decoder(DataParameter::GPU);
  EXPECT_EQ(error_of([&] { DataLayer<float>(p, Device::kCPU).setup({}, {&data}); }),
            "layer data (Data): data_param.decoder is GPU but JPEGs cannot be decoded there: it "
            "runs on the CPU");
}

// JPEG records are transformed from their 8-bit pixels: the floats are those of each image
// decoded to values (decode_image) and transformed by a transformer of the same seed, with
// crops and flips (7 records, odd and even widths).
TEST(DataLayer, JpegRecordsGiveTheirDecodedValuesTransformed) {
  CREMA_SKIP_WITHOUT_JPEG();
  TempDir dir;
  const std::string db = dir.file("db");
  constexpr int kRecords = 7, kH = 12, kW = 16;
  test::write_jpeg_lmdb(db, kRecords, 3, kH, kW);
  for (int crop : {9, 10}) {
    SCOPED_TRACE("crop " + std::to_string(crop));
    LayerParameter p = data_param(db, kRecords, TRAIN);
    TransformationParameter& tp = *p.mutable_transform_param();
    tp.set_crop_size(uint32_t(crop));
    tp.set_mirror(true);
    tp.add_mean_value(100);
    tp.set_scale(0.5f);
    seed_thread_rng(5);
    const uint64_t seed = thread_rng()();  // the layer's transformer takes the first draw
    seed_thread_rng(5);
    DataLayer<float> layer(p, Device::kCPU);
    Tensor<float> data, label;
    layer.setup({}, {&data, &label});
    Handle h;
    layer.forward(h, {}, {&data, &label});

    DataTransformer oracle(tp, TRAIN, seed);
    ASSERT_EQ(oracle.output_shape(3, kH, kW), (std::vector<int>{3, crop, crop}));
    const size_t example = size_t(3 * crop * crop);
    std::vector<float> want(example * kRecords);
    auto reader = open_record_reader(db, RecordBackend::kLmdb);
    for (int i = 0; i < kRecords; ++i, reader->next()) {
      Datum datum;
      decode_datum(reader->value(), db, reader->key(), &datum);
      ChwImage image;
      decode_image(datum.data(), "record", ColorMode::kNative, &image);
      oracle.transform(image.data.data(), 3, kH, kW, want.data() + example * size_t(i),
                       uint64_t(i));
    }
    EXPECT_EQ(data.data_vector(), want);
  }
}

}  // namespace
}  // namespace crema
