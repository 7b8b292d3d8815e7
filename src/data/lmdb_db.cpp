// LMDB reader and writer.
#include "data/lmdb_db.h"

#include <lmdb.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/errors.h"

namespace crema {

namespace {

[[noreturn]] void lmdb_fail(const std::string& path, const char* what, int rc) {
  fail(path, ": ", what, ": ", mdb_strerror(rc));
}

}  // namespace

LmdbReader::LmdbReader(const std::string& path) : path_(path) {
  // NOLOCK: reading needs no lock file, so datasets on read-only media open too. NOTLS: the
  // read transaction is created here but used by the data layer's prefetch thread.
  unsigned flags = MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) flags |= MDB_NOSUBDIR;
  int rc = mdb_env_create(&env_);
  if (rc != MDB_SUCCESS) lmdb_fail(path, "cannot open LMDB", rc);
  rc = mdb_env_open(env_, path.c_str(), flags, 0664);
  if (rc != MDB_SUCCESS) {
    close();
    lmdb_fail(path, "cannot open LMDB", rc);
  }
  MDB_dbi dbi = 0;
  MDB_stat stat;
  if ((rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn_)) != MDB_SUCCESS ||
      (rc = mdb_dbi_open(txn_, nullptr, 0, &dbi)) != MDB_SUCCESS ||
      (rc = mdb_stat(txn_, dbi, &stat)) != MDB_SUCCESS ||
      (rc = mdb_cursor_open(txn_, dbi, &cursor_)) != MDB_SUCCESS) {
    close();
    lmdb_fail(path, "cannot open LMDB", rc);
  }
  entries_ = stat.ms_entries;
  if (entries_ == 0) {
    close();
    fail(path, ": LMDB holds no records");
  }
  rewind();
}

LmdbReader::~LmdbReader() { close(); }

void LmdbReader::close() {
  if (cursor_) mdb_cursor_close(cursor_);
  if (txn_) mdb_txn_abort(txn_);
  if (env_) mdb_env_close(env_);
  cursor_ = nullptr;
  txn_ = nullptr;
  env_ = nullptr;
}

void LmdbReader::get(unsigned op) {
  MDB_val key, value;
  const int rc = mdb_cursor_get(cursor_, &key, &value, MDB_cursor_op(op));
  if (rc != MDB_SUCCESS) lmdb_fail(path_, "LMDB read failed", rc);
  key_ = std::string_view(static_cast<const char*>(key.mv_data), key.mv_size);
  value_ = std::string_view(static_cast<const char*>(value.mv_data), value.mv_size);
  note_read(value.mv_data, value.mv_size);
}

void LmdbReader::rewind() { get(MDB_FIRST); }

// Every record a pass reads stays mapped, so by the end of the first epoch the whole file counts
// as the process's resident memory (70 MB of Fashion-MNIST LMDBs), though nothing is kept from
// it: the data layer copies each record out. Every kReleaseEvery records, the pages spanned by
// the records read since the last release are dropped from the process (they stay in the page
// cache; a later read maps them again). The span lies inside LMDB's one read-only shared file
// mapping, so this never discards data.
void LmdbReader::note_read(const void* data, size_t size) {
  const auto lo = reinterpret_cast<uintptr_t>(data);
  span_lo_ = std::min(span_lo_, lo);
  span_hi_ = std::max(span_hi_, lo + size);
  if (++reads_ % kReleaseEvery != 0 || span_lo_ >= span_hi_) return;
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = span_lo_ / page * page, last = (span_hi_ + page - 1) / page * page;
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  span_lo_ = UINTPTR_MAX;
  span_hi_ = 0;
}

bool LmdbReader::next() {
  MDB_val key, value;
  const int rc = mdb_cursor_get(cursor_, &key, &value, MDB_NEXT);
  if (rc == MDB_NOTFOUND) {
    rewind();
    return true;
  }
  if (rc != MDB_SUCCESS) lmdb_fail(path_, "LMDB read failed", rc);
  key_ = std::string_view(static_cast<const char*>(key.mv_data), key.mv_size);
  value_ = std::string_view(static_cast<const char*>(value.mv_data), value.mv_size);
  note_read(value.mv_data, value.mv_size);
  return false;
}

LmdbWriter::LmdbWriter(const std::string& path, size_t initial_map_size, size_t batch)
    : path_(path), map_size_(initial_map_size), batch_(batch == 0 ? 1 : batch) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0)
    fail(path, ": already exists; remove it or choose another output");
  if (::mkdir(path.c_str(), 0755) != 0)
    fail(path, ": cannot create LMDB directory: ", std::strerror(errno));
  int rc = mdb_env_create(&env_);
  if (rc == MDB_SUCCESS) rc = mdb_env_set_mapsize(env_, map_size_);
  if (rc == MDB_SUCCESS) rc = mdb_env_open(env_, path.c_str(), 0, 0664);
  if (rc != MDB_SUCCESS) {
    if (env_) mdb_env_close(env_);
    env_ = nullptr;
    lmdb_fail(path, "cannot create LMDB", rc);
  }
}

LmdbWriter::~LmdbWriter() {
  if (env_) mdb_env_close(env_);
}

void LmdbWriter::put(std::string_view key, std::string_view value) {
  pending_.emplace_back(std::string(key), std::string(value));
  if (pending_.size() >= batch_) commit();
}

bool LmdbWriter::try_commit() {
  MDB_txn* txn = nullptr;
  MDB_dbi dbi = 0;
  int rc = mdb_txn_begin(env_, nullptr, 0, &txn);
  if (rc != MDB_SUCCESS) lmdb_fail(path_, "LMDB write failed", rc);
  rc = mdb_dbi_open(txn, nullptr, 0, &dbi);
  for (size_t i = 0; rc == MDB_SUCCESS && i < pending_.size(); ++i) {
    MDB_val key{pending_[i].first.size(), pending_[i].first.data()};
    MDB_val value{pending_[i].second.size(), pending_[i].second.data()};
    rc = mdb_put(txn, dbi, &key, &value, 0);
  }
  if (rc != MDB_SUCCESS) {
    mdb_txn_abort(txn);
  } else {
    rc = mdb_txn_commit(txn);  // frees txn whatever the outcome
  }
  if (rc == MDB_MAP_FULL) return false;
  if (rc != MDB_SUCCESS) lmdb_fail(path_, "LMDB write failed", rc);
  return true;
}

void LmdbWriter::commit() {
  if (pending_.empty()) return;
  // A full map is not an error: the whole batch is retried in a map twice as large, so the
  // file grows only as far as the data needs.
  while (!try_commit()) {
    constexpr size_t kMaxMapSize = size_t(1) << 44;
    if (map_size_ >= kMaxMapSize) fail(path_, ": LMDB map reached ", map_size_, " bytes");
    map_size_ *= 2;
    const int rc = mdb_env_set_mapsize(env_, map_size_);
    if (rc != MDB_SUCCESS) lmdb_fail(path_, "cannot grow the LMDB map", rc);
  }
  pending_.clear();
}

}  // namespace crema
