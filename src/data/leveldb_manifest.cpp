// A LevelDB folder's file names, manifest and logs as its recovery reads them (db/filename.cc,
// db/log_format.h, db/version_edit.cc, db/write_batch.cc of LevelDB describe them), checked for
// what LevelDB asserts on.
#include "data/leveldb_manifest.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.h"

namespace crema {
namespace {

constexpr int kLevels = 7;
constexpr uint64_t kMaxSequence = (uint64_t(1) << 56) - 1;

// LevelDB's fixed-width little-endian integers (the tags of keys, a write batch's header).
uint64_t fixed(std::string_view bytes, size_t at, int width) {
  uint64_t v = 0;
  for (int i = 0; i < width; ++i) v |= uint64_t(uint8_t(bytes[at + size_t(i)])) << (8 * i);
  return v;
}

// The bytes of a regular file (a folder of that name opens on Linux but cannot be read).
std::string read_file(const std::filesystem::path& path, bool* found) {
  std::error_code ec;
  std::ifstream in;
  if (std::filesystem::is_regular_file(path, ec)) in.open(path, std::ios::binary);
  *found = in.is_open();
  return *found ? std::string(std::istreambuf_iterator<char>(in), {}) : std::string();
}

// The logical records of a log file as LevelDB's log::Reader assembles them from 32 KiB blocks
// of fragments (a 7-byte header each: checksum, length, type), stopping at a fragment that runs
// past its block or the file. Checksums are not verified: LevelDB drops a record whose checksum
// fails, and its recovery then fails with that error.
std::vector<std::string> log_records(const std::string& file) {
  constexpr size_t kBlock = 32768, kHeader = 7;
  enum { kFull = 1, kFirst, kMiddle, kLast };
  std::vector<std::string> out;
  std::string partial;
  bool open = false;
  size_t pos = 0;
  while (pos < file.size()) {
    const size_t left = kBlock - pos % kBlock;
    if (left < kHeader) {  // the block's trailer
      pos += left;
      continue;
    }
    if (file.size() - pos < kHeader) break;
    const auto* h = reinterpret_cast<const uint8_t*>(file.data() + pos);
    const size_t length = size_t(h[4]) | size_t(h[5]) << 8;
    if (kHeader + length > left || kHeader + length > file.size() - pos) break;
    const std::string_view payload(file.data() + pos + kHeader, length);
    pos += kHeader + length;
    switch (h[6]) {
      case kFull:
        out.emplace_back(payload);
        open = false;
        break;
      case kFirst:
        partial.assign(payload);
        open = true;
        break;
      case kMiddle:
        if (open) partial.append(payload);
        break;
      case kLast:
        if (open) out.push_back(partial.append(payload));
        open = false;
        break;
      default:  // zero padding, unknown types: skipped or reported by LevelDB
        break;
    }
  }
  return out;
}

// Reads what version_edit.cc's decoder reads; false where it would fail.
struct Input {
  std::string_view rest;

  bool varint(uint64_t* v, int max_bytes = 10) {
    *v = 0;
    for (int i = 0; i < max_bytes && !rest.empty(); ++i) {
      const auto b = uint8_t(rest.front());
      rest.remove_prefix(1);
      *v |= uint64_t(b & 0x7f) << (7 * i);
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool slice(std::string_view* s) {
    uint64_t n = 0;
    if (!varint(&n, 5) || n > rest.size()) return false;
    *s = rest.substr(0, size_t(n));
    rest.remove_prefix(size_t(n));
    return true;
  }
  bool level(int* l) {
    uint64_t v = 0;
    if (!varint(&v, 5) || v >= kLevels) return false;
    *l = int(v);
    return true;
  }
  bool internal_key(std::string_view* k) { return slice(k) && !k->empty(); }
};

// LevelDB's internal key order: user keys bytewise, then the 8-byte tag (sequence and type),
// larger first.
int compare_keys(std::string_view a, std::string_view b) {
  const int r = a.substr(0, a.size() - 8).compare(b.substr(0, b.size() - 8));
  if (r != 0) return r;
  const uint64_t ta = fixed(a, a.size() - 8, 8), tb = fixed(b, b.size() - 8, 8);
  return ta > tb ? -1 : ta < tb ? 1 : 0;
}

struct TableFile {
  uint64_t number;
  std::string smallest, largest;
  // version_set.cc's BySmallestKey, the order of a level's files.
  bool operator<(const TableFile& o) const {
    const int r = compare_keys(smallest, o.smallest);
    return r != 0 ? r < 0 : number < o.number;
  }
};

class ManifestCheck {
 public:
  ManifestCheck(std::string folder, std::string file)
      : folder_(std::move(folder)), file_(std::move(file)) {}

  // Applies one record as VersionSet::Recover does; false where the record does not decode
  // (LevelDB's recovery stops there with its own error).
  bool apply(std::string_view record) {
    Input in{record};
    std::vector<std::pair<int, uint64_t>> deleted;
    std::vector<std::pair<int, TableFile>> added;
    while (!in.rest.empty()) {
      uint64_t tag = 0;
      if (!in.varint(&tag, 5)) return false;
      std::string_view s, smallest, largest;
      uint64_t v = 0, number = 0, size = 0;
      int level = 0;
      switch (tag) {
        case 1:  // comparator
          if (!in.slice(&s)) return false;
          break;
        case 2:  // log number
        case 3:  // next file number
        case 4:  // last sequence
        case 9:  // previous log number
          if (!in.varint(&v)) return false;
          (tag == 2 ? log_ : tag == 3 ? next_file_ : tag == 4 ? last_sequence_ : prev_log_) = {v};
          break;
        case 5:  // compact pointer
          if (!in.level(&level) || !in.internal_key(&s)) return false;
          key_length(s, "a compaction pointer of level " + std::to_string(level));
          break;
        case 6:  // deleted file
          if (!in.level(&level) || !in.varint(&number)) return false;
          deleted.emplace_back(level, number);
          break;
        case 7:  // new file
          if (!in.level(&level) || !in.varint(&number) || !in.varint(&size) ||
              !in.internal_key(&smallest) || !in.internal_key(&largest))
            return false;
          added.emplace_back(level, TableFile{number, std::string(smallest), std::string(largest)});
          break;
        default:
          return false;
      }
    }
    // Builder::Apply: deletions, then additions (which undo a deletion of their number); the
    // level's set orders them by their smallest keys, so every key is compared there.
    for (const auto& [level, number] : deleted) deleted_[level].insert(number);
    for (auto& [level, f] : added) {
      const std::string where =
          "file " + std::to_string(f.number) + " of level " + std::to_string(level);
      if (f.number == 0) refuse(where + ": table files are numbered from 1");
      key_length(f.smallest, where);
      key_length(f.largest, where);
      deleted_[level].erase(f.number);
      added_[level].insert(std::move(f));
    }
    return true;
  }

  // What Builder::SaveTo asserts, and the numbers DB::Open's first edit asserts on.
  void finish() const {
    for (int level = 1; level < kLevels; ++level) {
      const TableFile* last = nullptr;
      for (const TableFile& f : added_[level]) {
        if (deleted_[level].count(f.number)) continue;
        if (last && compare_keys(last->largest, f.smallest) >= 0)
          refuse("level " + std::to_string(level) + " lists files " + std::to_string(last->number) +
                 " and " + std::to_string(f.number) + " with overlapping keys");
        last = &f;
      }
    }
    if (!next_file_ || !log_ || !last_sequence_) return;  // LevelDB says what is missing
    const uint64_t next = *next_file_, log = std::max(*log_, prev_log_.value_or(0));
    if (next >= uint64_t(1) << 62)
      refuse("next file number " + std::to_string(next) + " is past 2^62");
    if (log >= next)
      refuse("log number " + std::to_string(log) + " is not below the next file number " +
             std::to_string(next));
    if (*last_sequence_ > kMaxSequence)
      refuse("last sequence number " + std::to_string(*last_sequence_) + " is past 2^56 - 1");
  }

 private:
  void key_length(std::string_view key, const std::string& where) const {
    if (key.size() < 8)
      refuse("a key of " + std::to_string(key.size()) + " bytes in " + where +
             " (internal keys end in an 8-byte tag)");
  }
  [[noreturn]] void refuse(const std::string& what) const {
    fail(folder_, ": corrupt LevelDB: ", file_, ": ", what);
  }

  std::string folder_, file_;
  std::set<uint64_t> deleted_[kLevels];
  std::set<TableFile> added_[kLevels];
  // The meta numbers, as the last record that holds each says.
  std::optional<uint64_t> log_, prev_log_, next_file_, last_sequence_;
};

// A log's write batches (a sequence number and a count in their 12-byte header) are replayed
// into the memtable, whose keys' tags assert sequence numbers up to 2^56 - 1.
void check_log(const std::string& folder, const std::string& name, const std::string& file) {
  for (const std::string& batch : log_records(file)) {
    if (batch.size() < 12) continue;  // LevelDB refuses it
    const uint64_t sequence = fixed(batch, 0, 8), count = fixed(batch, 8, 4);
    const uint64_t last = sequence + count - 1;  // as LevelDB computes it, wrapping
    if (sequence > kMaxSequence || last > kMaxSequence)
      fail(folder, ": corrupt LevelDB: ", name, ": a write batch's sequence numbers reach ",
           sequence > kMaxSequence ? sequence : last, ", past 2^56 - 1");
  }
}

// LevelDB asserts where it makes the name of a file numbered 0: a folder holding "000000.log" or
// "MANIFEST-000000" stops the process inside DB::Open.
void check_file_number(const std::string& folder, const std::string& name) {
  const size_t dot = name.find('.');
  std::string digits;
  if (name.rfind("MANIFEST-", 0) == 0) {
    digits = name.substr(9);
  } else if (dot != std::string::npos) {
    const std::string ext = name.substr(dot + 1);
    if (ext == "log" || ext == "sst" || ext == "ldb" || ext == "dbtmp")
      digits = name.substr(0, dot);
  }
  if (!digits.empty() && digits.find_first_not_of('0') == std::string::npos)
    fail(folder, ": corrupt LevelDB: file ", name, " has number 0");
}

}  // namespace

void check_leveldb_folder(const std::string& folder) {
  const std::filesystem::path dir(folder);
  bool found = false;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    check_file_number(folder, name);
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0)
      check_log(folder, name, read_file(it->path(), &found));
  }
  std::string current = read_file(dir / "CURRENT", &found);
  if (!found || current.empty() || current.back() != '\n') return;
  current.pop_back();
  const std::string manifest = read_file(dir / current, &found);
  if (!found) return;
  ManifestCheck check(folder, current);
  bool decoded = true;
  for (const std::string& record : log_records(manifest))
    if (!(decoded = check.apply(record))) break;
  if (decoded) check.finish();
}

}  // namespace crema
