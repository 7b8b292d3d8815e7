// LMDB reader and writer.
#include "data/lmdb_db.h"

#include <lmdb.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>

#include "core/errors.h"

namespace crema {

namespace {

[[noreturn]] void lmdb_fail(const std::string& path, const char* what, int rc) {
  fail(path, ": ", what, ": ", mdb_strerror(rc));
}

// The jump target of the read running on this thread (see on_fault), or nullptr.
thread_local sigjmp_buf* t_guard = nullptr;

// LMDB checks its pages with assertions that abort the process (a zeroed page fails
// "IS_LEAF(mp)" in mdb_cursor_next). This callback turns them into a crema::Error naming the
// database; the exception unwinds through liblmdb's C frames, which GCC builds with unwind tables
// by default on x86-64 Linux (Debian's liblmdb included). The reader is then unusable, and its
// destructor only frees it.
void assert_to_error(MDB_env* env, const char* msg) {
  t_guard = nullptr;  // the guarded read ends here, by this exception
  const auto* path = static_cast<const std::string*>(mdb_env_get_userctx(env));
  throw Error((path ? *path : std::string("LMDB")) + ": corrupt LMDB (" + msg + ")");
}

// A corrupt page can also send liblmdb to a page number past the end of the file, which the
// mapping answers with SIGBUS (or SIGSEGV), and a zero page size in a corrupt meta page makes
// mdb_env_open divide by zero (SIGFPE). While a thread runs a guarded LMDB call, such a fault
// jumps back to the call, which reports the corruption; any other fault goes to the handler
// that was there before (returning from the handler re-runs the faulting instruction with it).
constexpr int kFaults[] = {SIGBUS, SIGSEGV, SIGFPE};
struct sigaction g_previous[std::size(kFaults)];

void on_fault(int sig, siginfo_t*, void*) {
  if (sigjmp_buf* guard = t_guard) {
    t_guard = nullptr;
    siglongjmp(*guard, sig);
  }
  for (size_t i = 0; i < std::size(kFaults); ++i)
    if (kFaults[i] == sig) sigaction(sig, &g_previous[i], nullptr);
}

void install_fault_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kFaults); ++i) sigaction(kFaults[i], &sa, &g_previous[i]);
  });
}

// Runs the LMDB calls of f (returning an LMDB code) with a fault inside them reported as
// "<path>: corrupt LMDB: reading record <record> (opening it, for record -1) <what the fault
// means>". The signal mask need not be saved (a syscall per call): the handler runs with
// SA_NODEFER, so a fault leaves the mask as it was.
template <typename F>
int guarded(const std::string& path, int64_t record, F&& f) {
  sigjmp_buf guard;
  if (const int sig = sigsetjmp(guard, 0); sig != 0) {
    const char* meaning =
        sig == SIGFPE ? " met a zero size field" : " touched a page beyond the file";
    if (record < 0) fail(path, ": corrupt LMDB: opening it", meaning);
    fail(path, ": corrupt LMDB: reading record ", record, meaning);
  }
  t_guard = &guard;
  const int rc = f();
  t_guard = nullptr;
  return rc;
}

// The [start, end) of the mapping of file (dev, ino) that holds address a, from
// /proc/self/maps; {0, 0} when a lies in no mapping of that file.
std::pair<uintptr_t, uintptr_t> file_mapping_of(const void* a, dev_t dev, ino_t ino) {
  const auto p = reinterpret_cast<uintptr_t>(a);
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    unsigned long lo = 0, hi = 0, offset = 0, inode = 0;
    unsigned major = 0, minor = 0;
    char perms[8];
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perms, &offset, &major,
                    &minor, &inode) == 7 &&
        p >= lo && p < hi && inode == ino && makedev(major, minor) == dev && offset == 0)
      return {lo, hi};
  }
  return {0, 0};
}

}  // namespace

LmdbReader::LmdbReader(const std::string& path) : path_(path) {
  install_fault_handler();
  // NOLOCK: reading needs no lock file, so datasets on read-only media open too. NOTLS: the
  // read transaction is created here but used by the data layer's prefetch thread.
  unsigned flags = MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) flags |= MDB_NOSUBDIR;
  int rc = mdb_env_create(&env_);
  if (rc != MDB_SUCCESS) lmdb_fail(path, "cannot open LMDB", rc);
  mdb_env_set_userctx(env_, &path_);
  mdb_env_set_assert(env_, assert_to_error);
  MDB_stat stat{};
  try {
    rc = guarded(path, -1, [&] {
      MDB_dbi dbi = 0;
      int r = mdb_env_open(env_, path.c_str(), flags, 0664);
      if (r == MDB_SUCCESS) r = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn_);
      if (r == MDB_SUCCESS) r = mdb_dbi_open(txn_, nullptr, 0, &dbi);
      if (r == MDB_SUCCESS) r = mdb_stat(txn_, dbi, &stat);
      if (r == MDB_SUCCESS) r = mdb_cursor_open(txn_, dbi, &cursor_);
      return r;
    });
  } catch (...) {
    close();
    throw;
  }
  if (rc != MDB_SUCCESS) {
    close();
    lmdb_fail(path, "cannot open LMDB", rc);
  }
  entries_ = stat.ms_entries;
  mdb_filehandle_t fd;
  struct stat file;
  if ((rc = mdb_env_get_fd(env_, &fd)) != MDB_SUCCESS || ::fstat(fd, &file) != 0) {
    close();
    fail(path, ": cannot open LMDB: cannot read its size");
  }
  file_bytes_ = size_t(file.st_size);
  file_dev_ = file.st_dev;
  file_ino_ = file.st_ino;
  if (entries_ == 0) {
    close();
    fail(path, ": LMDB holds no records");
  }
  try {
    rewind();
  } catch (...) {
    close();
    throw;
  }
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

// Moves the cursor; false when op ran off the end. A failed read, a fault inside liblmdb, or a
// record that does not lie inside the database file (corrupt pages can make LMDB return success
// with garbage pointers) is an error naming the record.
bool LmdbReader::get(unsigned op) {
  const size_t record = op == MDB_FIRST ? 0 : index_ + 1;
  MDB_val key{0, nullptr}, value{0, nullptr};
  const int rc = guarded(path_, int64_t(record),
                         [&] { return mdb_cursor_get(cursor_, &key, &value, MDB_cursor_op(op)); });
  if (rc == MDB_NOTFOUND && op == MDB_NEXT) return false;
  if (rc != MDB_SUCCESS)
    fail(path_, ": LMDB read failed at record ", record, ": ", mdb_strerror(rc));
  // Every record must lie in the file's part of LMDB's mapping: corrupt pages can make LMDB
  // return success with pointers anywhere, and readers use the views after this call. LMDB does
  // not tell where it mapped the file: the first record found in a mapping of the file (from
  // offset 0) names it.
  if (map_lo_ == 0 && value.mv_data) {
    const auto [lo, hi] = file_mapping_of(value.mv_data, file_dev_, file_ino_);
    if (lo) {
      map_lo_ = lo;
      map_hi_ = std::min(hi, lo + file_bytes_);
    }
  }
  auto inside = [&](const MDB_val& v) {
    if (v.mv_size == 0) return true;
    const auto lo = reinterpret_cast<uintptr_t>(v.mv_data);
    if (!v.mv_data || v.mv_size > file_bytes_) return false;
    return map_lo_ != 0 && lo >= map_lo_ && lo <= map_hi_ && v.mv_size <= map_hi_ - lo;
  };
  if (!inside(key) || !inside(value))
    fail(path_, ": corrupt LMDB: record ", record, " lies outside the database file");
  index_ = record;
  key_ = std::string_view(static_cast<const char*>(key.mv_data), key.mv_size);
  value_ = std::string_view(static_cast<const char*>(value.mv_data), value.mv_size);
  note_read(value.mv_data, value.mv_size);
  return true;
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
  if (get(MDB_NEXT)) return false;
  rewind();
  return true;
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
