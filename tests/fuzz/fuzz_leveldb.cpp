// A LevelDB folder as the data layers read it: the input holds the folder's files
// (fuzz_util.h's packing: a real database's CURRENT, MANIFEST, log and table files are the
// seeds), opened, its records walked in key order (at most 64, then once around to the first)
// and decoded as Datums. A corrupt manifest, log or table must be an error naming the database,
// never an abort or a fault. In inputs of odd length the manifest's and logs' checksums are
// written anew, so that a mutation inside their records reaches LevelDB's recovery (and the
// assertions check_leveldb_folder guards) instead of stopping at the checksum.
#include <filesystem>
#include <fstream>
#include <iterator>

#include "data/datum.h"
#include "data/leveldb_db.h"
#include "fuzz_util.h"
#include "leveldb_log.h"

namespace {

void restamp_logs(const std::string& folder) {
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("MANIFEST-", 0) != 0 && entry.path().extension() != ".log") continue;
    std::string bytes;
    {
      std::ifstream in(entry.path(), std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    crema::test::restamp_checksums(&bytes);
    std::ofstream(entry.path(), std::ios::binary) << bytes;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!crema::leveldb_available()) return 0;
  const std::string path = crema::fuzz::unpack_folder(data, size, "leveldb");
  if (size % 2) restamp_logs(path);
  crema::fuzz::refused_or_accepted([&] {
    const std::unique_ptr<crema::RecordReader> reader = crema::open_leveldb_reader(path);
    for (size_t i = 0; i < 64 && i <= reader->size(); ++i) {
      crema::fuzz::refused_or_accepted([&] {
        crema::Datum datum;
        crema::decode_datum(reader->value(), reader->path(), reader->key(), &datum);
      });
      reader->next();
    }
  });
  return 0;
}
