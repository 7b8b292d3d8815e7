// A database file as the data layers read it: a single-file LMDB opened read-only, its records
// walked in key order (at most 64, then once around to the first) and decoded as Datums. A
// corrupt page must be an error naming the database, never an abort or a fault.
#include "data/datum.h"
#include "data/lmdb_db.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = crema::fuzz::as_file(data, size, "data.mdb");
  crema::fuzz::refused_or_accepted([&] {
    crema::LmdbReader reader(path);
    for (size_t i = 0; i < 64 && i <= reader.size(); ++i) {
      crema::fuzz::refused_or_accepted([&] {
        crema::Datum datum;
        crema::decode_datum(reader.value(), reader.path(), reader.key(), &datum);
      });
      reader.next();
    }
  });
  return 0;
}
