// extract_features: the features of two blobs of a tiny net with known weights, one float Datum
// per example under Caffe's keys, checked against a hand computation; and its errors.
#include "backends/extract_features.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "core/errors.h"
#include "core/proto_io.h"
#include "data/data_test_util.h"
#include "data/datum.h"
#include "data/image_test_util.h"
#include "data/lmdb_db.h"

namespace crema {
namespace {

using test::error_of;

using test::TempDir;

constexpr float kW[2][3] = {{1, 2, 3}, {-4, 5, -6}};
constexpr float kB[2] = {0.5f, -1};

// A Data layer over 4 records of 1x1x3 pixels (i * 10 + j) feeding InnerProduct(2), whose
// weights kW, kB are in net.caffemodel.
ExtractFeaturesRequest tiny_request(const TempDir& dir) {
  test::write_datum_lmdb(dir.file("db"), 4, 1, 1, 3);
  test::write_text(dir.file("net.prototxt"),
                   "layer { name: 'data' type: 'Data' top: 'data' top: 'label'\n"
                   "  data_param { source: '" +
                       dir.file("db") +
                       "' batch_size: 2 backend: LMDB } }\n"
                       "layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'ip'\n"
                       "  inner_product_param { num_output: 2 } }\n");
  NetParameter weights;
  LayerParameter* ip = weights.add_layer();
  ip->set_name("ip");
  ip->set_type("InnerProduct");
  BlobProto* w = ip->add_blobs();
  w->mutable_shape()->add_dim(2);
  w->mutable_shape()->add_dim(3);
  for (const auto& row : kW)
    for (float v : row) w->add_data(v);
  BlobProto* b = ip->add_blobs();
  b->mutable_shape()->add_dim(2);
  for (float v : kB) b->add_data(v);
  write_binary_proto_atomic(weights, dir.file("net.caffemodel"));
  ExtractFeaturesRequest r;
  r.weights = dir.file("net.caffemodel");
  r.net = dir.file("net.prototxt");
  r.blobs = {"ip", "data"};
  r.databases = {dir.file("ip_db"), dir.file("data_db")};
  r.num_mini_batches = 2;
  return r;
}

TEST(ExtractFeatures, WritesEachExampleOfEachBlob) {
  TempDir dir;
  const ExtractFeaturesRequest r = tiny_request(dir);
  EXPECT_EQ(extract_features(r), 4u);
  LmdbReader ip(dir.file("ip_db")), data(dir.file("data_db"));
  ASSERT_EQ(ip.size(), 4u);
  ASSERT_EQ(data.size(), 4u);
  for (int n = 0; n < 4; ++n, ip.next(), data.next()) {
    EXPECT_EQ(ip.key(), "000000000" + std::to_string(n));
    Datum d;
    decode_datum(ip.value(), "ip_db", ip.key(), &d);
    EXPECT_EQ(d.channels(), 2);
    EXPECT_EQ(d.height(), 1);
    EXPECT_EQ(d.width(), 1);
    ASSERT_EQ(d.float_data_size(), 2);
    for (int o = 0; o < 2; ++o) {
      double expected = kB[o];
      for (int j = 0; j < 3; ++j) expected += kW[o][j] * (n * 10 + j);
      EXPECT_FLOAT_EQ(d.float_data(o), float(expected)) << "example " << n << " output " << o;
    }
    decode_datum(data.value(), "data_db", data.key(), &d);
    EXPECT_EQ(d.channels() * 100 + d.height() * 10 + d.width(), 113);
    ASSERT_EQ(d.float_data_size(), 3);
    for (int j = 0; j < 3; ++j) EXPECT_EQ(d.float_data(j), float(n * 10 + j));
  }
}

TEST(ExtractFeatures, Errors) {
  TempDir dir;
  const ExtractFeaturesRequest base = tiny_request(dir);
  ExtractFeaturesRequest r = base;
  r.blobs = {"ip", "nope"};
  std::string msg = error_of([&] { extract_features(r); });
  EXPECT_NE(msg.find("the net has no blob \"nope\" (blobs: data, label, ip)"), std::string::npos)
      << msg;
  EXPECT_FALSE(std::filesystem::exists(dir.file("ip_db")));
  r.blobs = {"ip"};
  msg = error_of([&] { extract_features(r); });
  EXPECT_EQ(msg, "1 blob names but 2 database names: give one database per blob");
  r = base;
  r.num_mini_batches = 0;
  EXPECT_EQ(error_of([&] { extract_features(r); }), "num_mini_batches must be positive; got 0");
  r.num_mini_batches = 1;
  r.databases[1] = dir.file("db");
  EXPECT_NE(error_of([&] { extract_features(r); }).find("db: already exists"), std::string::npos);
  EXPECT_EQ(split_commas("a,,b,"), (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace crema
