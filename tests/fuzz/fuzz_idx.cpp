// An MNIST-style IDX file (raw or gzipped) read as images and as labels.
#include "data/idx.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = crema::fuzz::as_file(data, size, "input.idx");
  for (int rank : {3, 1}) crema::fuzz::refused_or_accepted([&] { crema::read_idx(path, rank); });
  return 0;
}
