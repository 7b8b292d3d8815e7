// An HDF5 file as crema reads one: as a .caffemodel.h5 (--weights, Caffe's HDF5 snapshots), as a
// .solverstate.h5 (--snapshot), and as an HDF5Data source file (the "data" and "label" datasets,
// their sizes checked before any is read). libhdf5 parses the file in its own, uninstrumented
// code: the sanitizers see crema's side only, and coverage guides the fuzzer through crema's
// reading, not through the library's parser.
#include <cstdio>
#include <string>

#include "core/hdf5_io.h"
#include "core/hdf5_weights.h"
#include "fuzz_util.h"

#ifdef CREMA_WITH_HDF5
#include <hdf5.h>
#endif

namespace {

// As an HDF5Data layer reads a source file: the sizes of "data" and "label", then their values.
void read_source(const std::string& path, const std::vector<std::string>& names) {
  const crema::hdf5::File f = crema::hdf5::File::open(path);
  for (const std::string& name : names) {
    crema::hdf5::dataset_info(f.id(), name, path);
    crema::hdf5::read_dataset<float>(f.id(), name, path);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!crema::hdf5::hdf5_available()) return 0;
#ifdef CREMA_WITH_HDF5
  // libhdf5 keeps up to 32 MiB of each kind of block it frees on its own free lists (the checking
  // process forks with the setting): at its default limits each file it opened calloced its
  // metadata cache anew, fresh pages under ASan, and page faults took half of each run. Without
  // a limit, blocks of every size a damaged file asks for pile up.
  static const bool kept =
      H5set_free_list_limits(128 << 20, 32 << 20, 128 << 20, 32 << 20, 128 << 20, 32 << 20) >= 0;
  (void)kept;
#endif
  // A new name each run: check_in_child skips a file it read cleanly before (path, size and
  // modification time, which a rewrite within the clock's tick would keep).
  static uint64_t run = 0;
  const std::string name = "input" + std::to_string(run++) + ".h5";
  const std::string path = crema::fuzz::as_file(data, size, name.c_str());
  crema::fuzz::refused_or_accepted([&] { crema::read_net_hdf5(path); });
  crema::fuzz::refused_or_accepted([&] { crema::read_solver_state_hdf5(path); });
  const std::vector<std::string> names = {"data", "label"};
  crema::fuzz::refused_or_accepted([&] {
    crema::hdf5::check_in_child(path, "an HDF5Data source", read_source, names);
    read_source(path, names);
  });
  std::remove(path.c_str());
  return 0;
}
