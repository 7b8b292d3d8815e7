// LMDB and LevelDB behind one reader and writer: records in key order with wrap-around, the
// backend named or found on disk, and a LevelDB training exactly as the same records in an LMDB.
#include "data/record_db.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.h"
#include "data/data_test_util.h"
#include "error_util.h"
#include "solver/data_parallel_util.h"

namespace crema {
namespace {

using test::error_of;

class RecordDb : public ::testing::TestWithParam<RecordBackend> {
 protected:
  void SetUp() override {
    if (GetParam() == RecordBackend::kLevelDb && !leveldb_available())
      GTEST_SKIP() << "built without LevelDB";
  }
  test::TempDir dir_;
};

TEST_P(RecordDb, RecordsComeInKeyOrderAndWrapAround) {
  const std::string path = dir_.file("db");
  {
    const auto writer = create_record_writer(path, GetParam());
    for (const char* key : {"c", "a", "b"}) writer->put(key, std::string("value ") + key);
    writer->commit();
  }
  EXPECT_EQ(detect_record_backend(path), GetParam());
  const auto reader = open_record_reader(path, GetParam());
  EXPECT_EQ(reader->size(), 3u);
  EXPECT_EQ(reader->path(), path);
  std::vector<std::string> seen;
  bool wrapped = false;
  for (int i = 0; i < 4; ++i, wrapped = reader->next())
    seen.push_back(std::string(reader->key()) + "=" + std::string(reader->value()));
  EXPECT_EQ(seen, (std::vector<std::string>{"a=value a", "b=value b", "c=value c", "a=value a"}));
  EXPECT_FALSE(wrapped);
  reader->next();
  reader->rewind();
  EXPECT_EQ(reader->key(), "a");
}

TEST_P(RecordDb, ExistingOutputsMissingInputsAndEmptyDatabasesAreErrors) {
  const std::string path = dir_.file("db");
  create_record_writer(path, GetParam())->commit();
  EXPECT_NE(error_of([&] { create_record_writer(path, GetParam()); }).find(path),
            std::string::npos);
  const std::string empty = error_of([&] { open_record_reader(path, GetParam()); });
  EXPECT_NE(empty.find(path), std::string::npos) << empty;
  const std::string missing = dir_.file("missing");
  const std::string error = error_of([&] { open_record_reader(missing, GetParam()); });
  EXPECT_EQ(error.rfind(missing + ": cannot open", 0), 0u) << error;
}

// The classifier of the data-parallel tests trains to the same bits from either database, named
// in data_param.backend or found on disk.
TEST_P(RecordDb, TrainingReadsTheSameBatches) {
  test::write_records(dir_.file("lmdb"), RecordBackend::kLmdb);
  test::write_records(dir_.file("db"), GetParam());
  // backend: how the data layers name theirs (nullopt: they do not, it is found on disk).
  const auto weights = [](SolverParameter p, std::optional<RecordBackend> backend) {
    for (LayerParameter& l : *p.mutable_net_param()->mutable_layer()) {
      if (!l.has_data_param()) continue;
      if (!backend)
        l.mutable_data_param()->clear_backend();
      else
        l.mutable_data_param()->set_backend(
            *backend == RecordBackend::kLevelDb ? DataParameter::LEVELDB : DataParameter::LMDB);
    }
    return test::run_replicas(p, Device::kCPU, {0})[0].weights;
  };
  const auto reference =
      weights(test::records_solver(dir_.file("lmdb"), 16, ""), RecordBackend::kLmdb);
  const SolverParameter p = test::records_solver(dir_.file("db"), 16, "");
  EXPECT_EQ(weights(p, GetParam()), reference);
  EXPECT_EQ(weights(p, std::nullopt), reference);
}

INSTANTIATE_TEST_SUITE_P(Backends, RecordDb,
                         ::testing::Values(RecordBackend::kLmdb, RecordBackend::kLevelDb),
                         [](const auto& info) { return record_backend_name(info.param); });

// LevelDB aborts inside DB::Open where it names a file numbered 0 (a fuzzed folder holding
// "000000.log"): such folders are refused before it is called.
TEST(RecordDbLevelDb, FileNumberZeroIsAnErrorNotAnAbort) {
  if (!leveldb_available()) GTEST_SKIP() << "built without LevelDB";
  test::TempDir dir;
  const std::string path = dir.file("db");
  {
    const auto writer = create_record_writer(path, RecordBackend::kLevelDb);
    writer->put("a", "value");
    writer->commit();
  }
  std::FILE* f = std::fopen((path + "/000000.log").c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  EXPECT_EQ(error_of([&] { open_record_reader(path, RecordBackend::kLevelDb); }),
            path + ": corrupt LevelDB: file 000000.log has number 0");
}

TEST(RecordDbNames, BackendsByName) {
  EXPECT_EQ(parse_record_backend("LMDB"), RecordBackend::kLmdb);
  EXPECT_EQ(parse_record_backend("leveldb"), RecordBackend::kLevelDb);
  EXPECT_EQ(error_of([] { parse_record_backend("rocksdb"); }),
            "unknown database backend \"rocksdb\" (lmdb or leveldb)");
}

}  // namespace
}  // namespace crema
