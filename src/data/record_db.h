// Caffe's record databases (DataParameter.backend): LMDB and LevelDB behind one reader and one
// writer, so that the Data layer and the tools read and write either. A reader iterates the
// records in key order and wraps around to the first after the last, as an epoch-based data
// layer needs; a writer creates a new database and never overwrites one.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace crema {

enum class RecordBackend { kLmdb, kLevelDb };

// "lmdb" or "leveldb" (any case, as Caffe's tools take them). Throws crema::Error for another.
RecordBackend parse_record_backend(const std::string& name);
const char* record_backend_name(RecordBackend backend);
// What is at path: a LevelDB (a CURRENT file and no data.mdb), else LMDB.
RecordBackend detect_record_backend(const std::string& path);
// Whether this build reads and writes LevelDB (libleveldb found at configure time).
bool leveldb_available();

class RecordReader {
 public:
  virtual ~RecordReader() = default;
  // The current record; the views stay valid until the reader moves or is destroyed.
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  // Moves to the next record, or back to the first after the last; returns true when it wrapped.
  virtual bool next() = 0;
  virtual void rewind() = 0;
  virtual size_t size() const = 0;
  virtual const std::string& path() const = 0;
};

class RecordWriter {
 public:
  virtual ~RecordWriter() = default;
  // Queues a record; the writer commits in batches. Pending records not committed are dropped.
  virtual void put(std::string_view key, std::string_view value) = 0;
  // Writes what is queued. Throws crema::Error naming the path on failure.
  virtual void commit() = 0;
};

// Opens path read-only on its first record. Throws crema::Error naming the path when it cannot
// be opened, holds no records or is corrupt, and for LevelDB in a build without it.
std::unique_ptr<RecordReader> open_record_reader(const std::string& path, RecordBackend backend);
// Creates a new database at path; an existing path is an error.
std::unique_ptr<RecordWriter> create_record_writer(const std::string& path, RecordBackend backend);

}  // namespace crema
