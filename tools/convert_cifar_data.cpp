// convert_cifar_data: CIFAR-10's binary batches to the two databases of Caffe's cifar10 example.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "backends/convert_cifar.h"

namespace {

constexpr const char* kUsage =
    "usage: convert_cifar_data <input_folder> <output_folder> [lmdb|leveldb]\n"
    "Reads data_batch_1.bin ... data_batch_5.bin and test_batch.bin (CIFAR-10's binary version)\n"
    "from <input_folder> and writes <output_folder>/cifar10_train_lmdb and cifar10_test_lmdb\n"
    "(_leveldb with leveldb),\n"
    "one Datum per image (3 x 32 x 32 raw pixels, its label) under the keys 00000, 00001, ...\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "convert_cifar_data: expected 2 or 3 arguments, got %d\n%s", argc - 1,
                 kUsage);
    return 1;
  }
  try {
    const auto [train, test] = crema::convert_cifar(
        argv[1], argv[2], crema::parse_record_backend(argc == 4 ? argv[3] : "lmdb"));
    std::printf("convert_cifar_data: wrote %zu training and %zu test records to %s\n", train, test,
                argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "convert_cifar_data: %s\n", e.what());
    return 1;
  }
  return 0;
}
