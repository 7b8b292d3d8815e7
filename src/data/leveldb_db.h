// LevelDB behind record_db.h's reader and writer (Caffe's default backend for several of its
// examples). Built where libleveldb is found; elsewhere leveldb_available() is false and these
// are not called.
#pragma once

#include <memory>
#include <string>

#include "data/record_db.h"

namespace crema {

// Opens a LevelDB read-only (no other process may hold it open: LevelDB locks it) and counts its
// records, so that readers can shard and seek by index as with LMDB.
std::unique_ptr<RecordReader> open_leveldb_reader(const std::string& path);
// Creates a new LevelDB (error_if_exists), writing in batches of 1,000 records.
std::unique_ptr<RecordWriter> create_leveldb_writer(const std::string& path);

}  // namespace crema
