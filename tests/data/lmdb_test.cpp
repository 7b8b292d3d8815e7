// LMDB reader and writer: round trip across commit batches and map growth, wrap-around, errors.
#include <gtest/gtest.h>

#include <cctype>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/errors.h"
#include "data/lmdb_db.h"
#include "data_test_util.h"
#include "test_util.h"

namespace crema {
namespace {

using test::error_of;

using test::TempDir;

// Record i's key: zero-padded, so keys sort in record order.
std::string key_of(int i) {
  char key[16];
  std::snprintf(key, sizeof key, "%08d", i);
  return key;
}

// Puts records 0..n-1 (key_of(i), value_of(i)) and commits.
template <typename ValueOf>
void put_records(LmdbWriter& writer, int n, const ValueOf& value_of) {
  for (int i = 0; i < n; ++i) writer.put(key_of(i), value_of(i));
  writer.commit();
}

TEST(Lmdb, RoundTripAcrossBatchesAndMapGrowth) {
  TempDir dir;
  const std::string path = dir.file("db");
  const int n = 2500;
  auto value_of = [](int i) { return std::string(100 + i % 7, char('a' + i % 26)); };
  {
    // A 64 KiB map and batches of 1000 force several commits and several map doublings.
    LmdbWriter writer(path, 64 << 10, 1000);
    put_records(writer, n, value_of);
    EXPECT_GT(writer.map_size(), size_t(64 << 10));
  }
  LmdbReader reader(path);
  ASSERT_EQ(reader.size(), size_t(n));
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(reader.key(), key_of(i));
    ASSERT_EQ(reader.value(), value_of(i));
    EXPECT_EQ(reader.next(), i == n - 1);
  }
  EXPECT_EQ(reader.key(), "00000000");  // wrapped around
  reader.next();
  reader.rewind();
  EXPECT_EQ(reader.key(), "00000000");
}

// Resident kB of this process's mappings of `file` (from /proc/self/smaps).
long resident_kb_of(const std::string& file) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_file = false;
  long kb = 0;
  while (std::getline(smaps, line)) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find('-') < line.find(' '))
      in_file = line.size() >= file.size() &&
                line.compare(line.size() - file.size(), file.size(), file) == 0;
    else if (in_file && line.rfind("Rss:", 0) == 0)
      kb += std::stol(line.substr(4));
  }
  return kb;
}

// A long sequential read releases the pages it has passed (a full epoch would otherwise keep the
// whole file resident) and still returns every record intact, across the releases and the
// wrap-around, overflow pages (records larger than a page) included.
TEST(Lmdb, LongScansReleaseReadPagesAndStayIntact) {
  TempDir dir;
  const std::string path = dir.file("db");
  const int n = 3 * 4096 + 123;
  auto value_of = [](int i) {
    return std::string(i % 97 == 0 ? 9000 : 700 + i % 13, char('a' + i % 26));
  };
  {
    LmdbWriter writer(path, 1 << 20, 5000);
    put_records(writer, n, value_of);
  }
  const long file_kb = long(std::filesystem::file_size(path + "/data.mdb") / 1024);
  ASSERT_GT(file_kb, 8000);
  LmdbReader reader(path);
  for (int pass = 0; pass < 2; ++pass)
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(reader.key(), key_of(i));
      ASSERT_EQ(reader.value(), value_of(i)) << "record " << i << ", pass " << pass;
      reader.next();
    }
  const long resident = resident_kb_of("/data.mdb");
  EXPECT_LT(resident, file_kb / 2) << "of a " << file_kb << " kB file";
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

// A meta page whose page size is 0 made mdb_env_open divide by zero (SIGFPE, a fuzz finding):
// now an error naming the database.
TEST(Lmdb, ZeroPageSizeInTheMetaPagesIsAnError) {
  TempDir dir;
  const std::string path = dir.file("db");
  {
    LmdbWriter writer(path);
    put_records(writer, 3, [](int i) { return std::string(10, char('a' + i)); });
  }
  {
    // Both meta pages (the file's first two 4 KiB pages) hold the page size at byte 40: past the
    // 16-byte page header and the magic, version, address and map size (24 bytes).
    std::fstream f(path + "/data.mdb", std::ios::in | std::ios::out | std::ios::binary);
    for (std::streamoff meta : {0, 4096}) {
      f.seekp(meta + 40);
      f.write("\0\0\0\0", 4);
    }
  }
  EXPECT_EQ(error_of([&] { LmdbReader r(path); }),
            path + ": corrupt LMDB: opening it met a zero size field");
}

// Every page of a database zeroed, or filled with 0xff, in turn: opening and reading a whole
// epoch either works (0xff over a leaf page still parses) or ends in a crema::Error naming the
// database -- never LMDB's assertion abort ("IS_LEAF(mp)"), a SIGBUS from a page number past the
// end of the file, or a read through a garbage pointer. A zeroed page is always noticed.
TEST(Lmdb, CorruptPagesAreErrorsNamingTheDatabase) {
  TempDir dir;
  const std::string clean = dir.file("clean");
  const int n = 300;
  {
    LmdbWriter writer(clean);
    put_records(writer, n, [](int i) { return std::string(100, char('a' + i % 26)); });
  }
  const auto bytes = std::filesystem::file_size(clean + "/data.mdb");
  const size_t page = 4096;
  ASSERT_GT(bytes / page, 6u);
  for (size_t p = 0; p < bytes / page; ++p) {
    for (const char fill : {'\0', '\xff'}) {
      SCOPED_TRACE("page " + std::to_string(p) + (fill ? " 0xff" : " zeroed"));
      const std::string path = dir.file("bad_" + std::to_string(p) + (fill ? "_ff" : "_00"));
      std::filesystem::create_directory(path);
      std::filesystem::copy_file(clean + "/data.mdb", path + "/data.mdb");
      {
        std::fstream f(path + "/data.mdb", std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(std::streamoff(p * page));
        f.write(std::string(page, fill).data(), std::streamsize(page));
      }
      const std::string msg = error_of([&] {
        LmdbReader reader(path);
        for (size_t i = 0; i <= reader.size(); ++i) reader.next();
      });
      if (fill == '\0') {
        EXPECT_NE(msg, "(no error)");
      }
      if (msg != "(no error)") {
        EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
      }
    }
  }
}

// The reader's fault handler keeps faults outside its reads what they were: the process still
// dies of them (under AddressSanitizer, whose handler comes before ours, by its report).
TEST(LmdbDeathTest, OtherFaultsStillKillTheProcess) {
  TempDir dir;
  const std::string path = dir.file("db");
  {
    LmdbWriter writer(path);
    put_records(writer, 3, [](int i) { return std::string(10, char('a' + i)); });
  }
  auto fault = [&] {
    LmdbReader reader(path);
    reader.next();
    volatile int* nowhere = nullptr;
    *nowhere = 1;
  };
  if (test::kAddressSanitizer)
    EXPECT_EXIT(fault(), ::testing::ExitedWithCode(1), "AddressSanitizer: SEGV");
  else
    EXPECT_EXIT(fault(), ::testing::KilledBySignal(SIGSEGV), "");
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
