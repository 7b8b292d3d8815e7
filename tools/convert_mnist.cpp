// convert_mnist: MNIST / Fashion-MNIST IDX files (raw or .gz) to an LMDB (or LevelDB) of Datum
// records, the dataset format of the Data layer and of Caffe's examples.
#include "backends/convert_mnist.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "core/errors.h"

namespace {

constexpr const char* kUsage =
    "usage: convert_mnist <images.idx[.gz]> <labels.idx[.gz]> <output_db> "
    "[--backend=lmdb|leveldb]\n"
    "Writes one Datum per image (1 channel, raw uint8 pixels, its label) under the keys\n"
    "00000000, 00000001, ... into a new database <output_db> (default LMDB), which must not "
    "exist.\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  std::string backend = "lmdb";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg.rfind("--backend=", 0) == 0) {
      backend = arg.substr(std::strlen("--backend="));
    } else if (arg.rfind("--", 0) == 0) {
      std::fprintf(stderr, "convert_mnist: unknown option %s\n%s", arg.c_str(), kUsage);
      return 1;
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 3) {
    std::fprintf(stderr, "convert_mnist: expected 3 arguments, got %zu\n%s", positional.size(),
                 kUsage);
    return 1;
  }
  try {
    const size_t n = crema::convert_mnist(positional[0], positional[1], positional[2],
                                          crema::parse_record_backend(backend));
    std::printf("convert_mnist: wrote %zu records to %s\n", n, positional[2].c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "convert_mnist: %s\n", e.what());
    return 1;
  }
  return 0;
}
