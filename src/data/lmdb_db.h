// RAII access to LMDB databases, the format of Caffe's datasets. LmdbReader iterates the records
// of a read-only database in key order and wraps around to the first record at the end, as an
// epoch-based data layer needs; LmdbWriter batches puts into transactions and grows the map
// when it fills. Both accept Caffe's directory layout (path/data.mdb) and a single-file LMDB.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/record_db.h"

// Opaque LMDB handles, so users of this header need not include lmdb.h.
struct MDB_env;
struct MDB_txn;
struct MDB_cursor;

namespace crema {

class LmdbReader final : public RecordReader {
 public:
  // Opens path read-only and positions on the first record. Throws crema::Error
  // "<path>: cannot open LMDB: <reason>" when it cannot be opened, and an error naming the path
  // when the database holds no records. A corrupt database is an error naming the path (and the
  // record, where LMDB gets that far) when opening or a read meets the damage, never an abort:
  // the first reader installs SIGBUS, SIGSEGV and SIGFPE handlers that catch faults inside its
  // LMDB calls and pass every other fault on to the handlers that were there before.
  explicit LmdbReader(const std::string& path);
  ~LmdbReader() override;
  LmdbReader(const LmdbReader&) = delete;
  LmdbReader& operator=(const LmdbReader&) = delete;

  // The current record. The views stay valid until the reader moves or is destroyed.
  std::string_view key() const override { return key_; }
  std::string_view value() const override { return value_; }
  // Moves to the next record, or back to the first after the last; returns true when it wrapped.
  bool next() override;
  // Moves to the first record.
  void rewind() override;

  size_t size() const override { return entries_; }
  const std::string& path() const override { return path_; }

 private:
  bool get(unsigned op);
  void close();
  void note_read(const void* data, size_t size);

  static constexpr size_t kReleaseEvery = 4096;

  std::string path_;
  MDB_env* env_ = nullptr;
  MDB_txn* txn_ = nullptr;
  MDB_cursor* cursor_ = nullptr;
  size_t entries_ = 0;
  size_t index_ = 0;  // of the current record in key order
  size_t reads_ = 0;
  size_t file_bytes_ = 0;
  uintptr_t map_lo_ = 0, map_hi_ = 0;  // the file's part of LMDB's mapping (0: not found yet)
  dev_t file_dev_ = 0;                 // the file's identity, to find that mapping
  ino_t file_ino_ = 0;
  uintptr_t span_lo_ = UINTPTR_MAX, span_hi_ = 0;  // mapped bytes read since the last release
  std::string_view key_, value_;
};

class LmdbWriter final : public RecordWriter {
 public:
  static constexpr size_t kDefaultMapSize = size_t(1) << 28;
  static constexpr size_t kDefaultBatch = 1000;

  // Creates a new LMDB directory at path; an existing path is an error (nothing is overwritten).
  // The map starts at initial_map_size bytes and doubles whenever it is full.
  explicit LmdbWriter(const std::string& path, size_t initial_map_size = kDefaultMapSize,
                      size_t batch = kDefaultBatch);
  // Pending puts not yet committed are discarded: call commit() to keep them.
  ~LmdbWriter() override;
  LmdbWriter(const LmdbWriter&) = delete;
  LmdbWriter& operator=(const LmdbWriter&) = delete;

  // Queues a record; every `batch` puts are committed in one transaction.
  void put(std::string_view key, std::string_view value) override;
  // Writes the queued records to disk. Throws crema::Error naming the path on failure.
  void commit() override;

  size_t map_size() const { return map_size_; }
  const std::string& path() const { return path_; }

 private:
  // One attempt to write the pending records; returns false when the map was full.
  bool try_commit();

  std::string path_;
  MDB_env* env_ = nullptr;
  size_t map_size_;
  size_t batch_;
  std::vector<std::pair<std::string, std::string>> pending_;
};

}  // namespace crema
