// The backend choice and the factories of record_db.h.
#include "data/record_db.h"

#include <strings.h>
#include <sys/stat.h>

#include "core/errors.h"
#include "data/leveldb_db.h"
#include "data/lmdb_db.h"

namespace crema {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

[[noreturn]] void no_leveldb(const std::string& path) {
  fail(path,
       ": this build of crema reads no LevelDB (configure it with libleveldb-dev installed; "
       "or convert the data set to LMDB with --backend=lmdb)");
}

}  // namespace

RecordBackend parse_record_backend(const std::string& name) {
  if (strcasecmp(name.c_str(), "lmdb") == 0) return RecordBackend::kLmdb;
  if (strcasecmp(name.c_str(), "leveldb") == 0) return RecordBackend::kLevelDb;
  fail("unknown database backend \"", name, "\" (lmdb or leveldb)");
}

const char* record_backend_name(RecordBackend backend) {
  return backend == RecordBackend::kLmdb ? "lmdb" : "leveldb";
}

RecordBackend detect_record_backend(const std::string& path) {
  return exists(path + "/CURRENT") && !exists(path + "/data.mdb") ? RecordBackend::kLevelDb
                                                                  : RecordBackend::kLmdb;
}

std::unique_ptr<RecordReader> open_record_reader(const std::string& path, RecordBackend backend) {
  if (backend == RecordBackend::kLmdb) return std::make_unique<LmdbReader>(path);
  if (!leveldb_available()) no_leveldb(path);
  return open_leveldb_reader(path);
}

std::unique_ptr<RecordWriter> create_record_writer(const std::string& path, RecordBackend backend) {
  if (backend == RecordBackend::kLmdb) return std::make_unique<LmdbWriter>(path);
  if (!leveldb_available()) no_leveldb(path);
  return create_leveldb_writer(path);
}

}  // namespace crema
