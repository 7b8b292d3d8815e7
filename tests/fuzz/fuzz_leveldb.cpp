// A LevelDB folder as the data layers read it: the input holds the folder's files
// (fuzz_util.h's packing: a real database's CURRENT, MANIFEST, log and table files are the
// seeds), opened, its records walked in key order (at most 64, then once around to the first)
// and decoded as Datums. A corrupt manifest, log or table must be an error naming the database,
// never an abort or a fault.
#include "data/datum.h"
#include "data/leveldb_db.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!crema::leveldb_available()) return 0;
  const std::string path = crema::fuzz::unpack_folder(data, size, "leveldb");
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
