// LMDB reader and writer: round trip across commit batches and map growth, wrap-around, errors.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "core/errors.h"
#include "data/lmdb_db.h"
#include "data_test_util.h"

namespace crema {
namespace {

using test::TempDir;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Lmdb, RoundTripAcrossBatchesAndMapGrowth) {
  TempDir dir;
  const std::string path = dir.file("db");
  const int n = 2500;
  auto value_of = [](int i) { return std::string(100 + i % 7, char('a' + i % 26)); };
  {
    // A 64 KiB map and batches of 1000 force several commits and several map doublings.
    LmdbWriter writer(path, 64 << 10, 1000);
    for (int i = 0; i < n; ++i) {
      char key[16];
      std::snprintf(key, sizeof key, "%08d", i);
      writer.put(key, value_of(i));
    }
    writer.commit();
    EXPECT_GT(writer.map_size(), size_t(64 << 10));
  }
  LmdbReader reader(path);
  ASSERT_EQ(reader.size(), size_t(n));
  for (int i = 0; i < n; ++i) {
    char key[16];
    std::snprintf(key, sizeof key, "%08d", i);
    ASSERT_EQ(reader.key(), key);
    ASSERT_EQ(reader.value(), value_of(i));
    EXPECT_EQ(reader.next(), i == n - 1);
  }
  EXPECT_EQ(reader.key(), "00000000");  // wrapped around
  reader.next();
  reader.rewind();
  EXPECT_EQ(reader.key(), "00000000");
}

TEST(Lmdb, OpensTheDataFileItself) {
  TempDir dir;
  test::write_datum_lmdb(dir.file("db"), 3, 1, 1, 1);
  LmdbReader reader(dir.file("db") + "/data.mdb");
  EXPECT_EQ(reader.size(), 3u);
  EXPECT_EQ(reader.key(), "00000000");
}

TEST(Lmdb, MissingPathIsAnError) {
  const std::string msg = error_of([] { LmdbReader r("/nonexistent/train_lmdb"); });
  EXPECT_EQ(msg, "/nonexistent/train_lmdb: cannot open LMDB: No such file or directory");
}

TEST(Lmdb, GarbageFileIsAnError) {
  TempDir dir;
  const std::string path = dir.file("garbage");
  std::ofstream(path) << std::string(10000, 'x');
  const std::string msg = error_of([&] { LmdbReader r(path); });
  EXPECT_EQ(msg.rfind(path + ": cannot open LMDB: ", 0), 0u) << msg;
}

TEST(Lmdb, EmptyDatabaseIsAnError) {
  TempDir dir;
  const std::string path = dir.file("empty");
  { LmdbWriter writer(path); }
  const std::string msg = error_of([&] { LmdbReader r(path); });
  EXPECT_EQ(msg, path + ": LMDB holds no records");
}

TEST(Lmdb, WriterRefusesAnExistingPath) {
  TempDir dir;
  const std::string path = dir.file("db");
  test::write_datum_lmdb(path, 2, 1, 1, 1);
  const std::string msg = error_of([&] { LmdbWriter w(path); });
  EXPECT_NE(msg.find(path + ": already exists"), std::string::npos) << msg;
  EXPECT_EQ(LmdbReader(path).size(), 2u);  // left as it was
}

TEST(Lmdb, UncommittedPutsAreDiscarded) {
  TempDir dir;
  const std::string path = dir.file("db");
  {
    LmdbWriter writer(path, LmdbWriter::kDefaultMapSize, 2);
    writer.put("a", "1");
    writer.put("b", "2");  // commits a batch of 2
    writer.put("c", "3");  // pending, never committed
  }
  LmdbReader reader(path);
  EXPECT_EQ(reader.size(), 2u);
}

}  // namespace
}  // namespace crema
