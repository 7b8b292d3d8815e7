// LevelDB manifests and logs that are well formed, checksums included, but say what LevelDB's
// assertions do not allow: each is one error naming the folder and the file, from
// check_leveldb_folder and, where LevelDB is built in, from opening the database (where
// Debian's libleveldb would otherwise abort the process).
#include "data/leveldb_manifest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/data_test_util.h"
#include "data/record_db.h"
#include "error_util.h"
#include "leveldb_log.h"

namespace crema {
namespace {

using test::error_of;
using test::internal_key;
using test::put_bytes;
using test::put_varint;

// A VersionEdit record, field by field.
struct Edit {
  std::string bytes;
  Edit& comparator() {
    put_varint(&bytes, 1);
    put_bytes(&bytes, "leveldb.BytewiseComparator");
    return *this;
  }
  Edit& number(int tag, uint64_t v) {  // 2 log, 3 next file, 4 last sequence, 9 previous log
    put_varint(&bytes, uint64_t(tag));
    put_varint(&bytes, v);
    return *this;
  }
  Edit& file(int level, uint64_t number, const std::string& smallest, const std::string& largest) {
    put_varint(&bytes, 7);
    put_varint(&bytes, uint64_t(level));
    put_varint(&bytes, number);
    put_varint(&bytes, 1000);  // size
    put_bytes(&bytes, smallest);
    put_bytes(&bytes, largest);
    return *this;
  }
  Edit& deleted(int level, uint64_t number) {
    put_varint(&bytes, 6);
    put_varint(&bytes, uint64_t(level));
    put_varint(&bytes, number);
    return *this;
  }
};

// The meta numbers of a database after its first open: log 3, next file 4, last sequence 5.
Edit meta() { return Edit().comparator().number(2, 3).number(3, 4).number(4, 5); }

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A folder holding CURRENT and MANIFEST-000002 of these records.
std::string folder_with(const test::TempDir& dir, const std::vector<Edit>& edits) {
  const std::string path = dir.file("db");
  std::filesystem::create_directories(path);
  std::vector<std::string> records;
  for (const Edit& e : edits) records.push_back(e.bytes);
  write(path + "/CURRENT", "MANIFEST-000002\n");
  write(path + "/MANIFEST-000002", test::log_file(records));
  return path;
}

TEST(LevelDbManifest, WellFormedManifestsPass) {
  test::TempDir dir;
  // Level 1's files in key order; a file of level 2 deleted and added back; level 0 overlaps.
  const std::string path = folder_with(
      dir, {meta(),
            Edit()
                .file(1, 7, internal_key("a", 9), internal_key("c", 8))
                .file(1, 8, internal_key("d", 7), internal_key("f", 6))
                .file(0, 9, internal_key("a", 3), internal_key("z", 2))
                .file(0, 10, internal_key("b", 5), internal_key("y", 4)),
            Edit().deleted(1, 8).file(1, 11, internal_key("c", 1), internal_key("e", 1))});
  EXPECT_NO_THROW(check_leveldb_folder(path));
  // No CURRENT, or a CURRENT naming a folder (here the database's own, through a NUL in the
  // name): LevelDB says so itself.
  EXPECT_NO_THROW(check_leveldb_folder(dir.file("none")));
  write(path + "/CURRENT", std::string("\0MANIFEST\n", 10));
  EXPECT_NO_THROW(check_leveldb_folder(path));
}

TEST(LevelDbManifest, WhatLevelDbAssertsOnIsOneError) {
  test::TempDir dir;
  const std::string overlap =
      folder_with(dir, {meta().file(2, 7, internal_key("a", 9), internal_key("m", 8)),
                        Edit().file(2, 8, internal_key("k", 7), internal_key("z", 6))});
  EXPECT_EQ(error_of([&] { check_leveldb_folder(overlap); }),
            overlap +
                ": corrupt LevelDB: MANIFEST-000002: level 2 lists files 7 and 8 with "
                "overlapping keys");
  const std::string short_key = folder_with(dir, {meta().file(0, 7, "abc", internal_key("b", 1))});
  EXPECT_EQ(error_of([&] { check_leveldb_folder(short_key); }),
            short_key +
                ": corrupt LevelDB: MANIFEST-000002: a key of 3 bytes in file 7 of level "
                "0 (internal keys end in an 8-byte tag)");
  const std::string zero =
      folder_with(dir, {meta().file(3, 0, internal_key("a", 1), internal_key("b", 1))});
  EXPECT_EQ(error_of([&] { check_leveldb_folder(zero); }),
            zero +
                ": corrupt LevelDB: MANIFEST-000002: file 0 of level 3: table files are "
                "numbered from 1");
  const std::string log = folder_with(dir, {meta().number(2, 9)});
  EXPECT_EQ(error_of([&] { check_leveldb_folder(log); }),
            log +
                ": corrupt LevelDB: MANIFEST-000002: log number 9 is not below the next file "
                "number 4");
  const std::string sequence = folder_with(dir, {meta().number(4, uint64_t(1) << 56)});
  EXPECT_EQ(error_of([&] { check_leveldb_folder(sequence); }),
            sequence + ": corrupt LevelDB: MANIFEST-000002: last sequence number " +
                std::to_string(uint64_t(1) << 56) + " is past 2^56 - 1");
  // A log whose write batch starts at sequence 2^56 - 1 and holds 2 records.
  const std::string batches = folder_with(dir, {meta()});
  std::string batch(12, '\0');
  const uint64_t first = (uint64_t(1) << 56) - 1;
  for (int i = 0; i < 8; ++i) batch[size_t(i)] = char((first >> (8 * i)) & 0xff);
  batch[8] = 2;
  write(batches + "/000003.log", test::log_file({batch}));
  EXPECT_EQ(error_of([&] { check_leveldb_folder(batches); }),
            batches + ": corrupt LevelDB: 000003.log: a write batch's sequence numbers reach " +
                std::to_string(first + 1) + ", past 2^56 - 1");
}

// A database LevelDB wrote passes; with its manifest replaced by one listing overlapping files
// in level 1 (checksums right), opening it is the error above, not an abort inside DB::Open.
TEST(LevelDbManifest, OpeningARealDatabase) {
  if (!leveldb_available()) GTEST_SKIP() << "built without LevelDB";
  test::TempDir dir;
  const std::string path = dir.file("db");
  {
    const auto writer = create_record_writer(path, RecordBackend::kLevelDb);
    for (const char* key : {"a", "b", "c"}) writer->put(key, "value");
    writer->commit();
  }
  EXPECT_NO_THROW(check_leveldb_folder(path));
  EXPECT_EQ(open_record_reader(path, RecordBackend::kLevelDb)->size(), 3u);
  std::ifstream current(path + "/CURRENT");
  std::string name;
  std::getline(current, name);
  write(path + "/" + name,
        test::log_file({meta().number(3, 100).bytes,
                        Edit().file(1, 50, internal_key("a", 9), internal_key("m", 8)).bytes,
                        Edit().file(1, 51, internal_key("k", 7), internal_key("z", 6)).bytes}));
  EXPECT_EQ(error_of([&] { open_record_reader(path, RecordBackend::kLevelDb); }),
            path + ": corrupt LevelDB: " + name +
                ": level 1 lists files 50 and 51 with overlapping keys");
}

}  // namespace
}  // namespace crema
