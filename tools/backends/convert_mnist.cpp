// IDX images + labels -> LMDB or LevelDB of Datum.
#include "backends/convert_mnist.h"

#include <sys/stat.h>

#include <cstdio>

#include "core/errors.h"
#include "crema.pb.h"
#include "data/idx.h"

namespace crema {

size_t convert_mnist(const std::string& images_path, const std::string& labels_path,
                     const std::string& output_path, RecordBackend backend) {
  struct stat st;
  if (::stat(output_path.c_str(), &st) == 0)
    fail(output_path, ": already exists; remove it or choose another output");
  const IdxArray images = read_idx_images(images_path);
  const IdxArray labels = read_idx_labels(labels_path);
  const uint32_t n = images.dims[0], rows = images.dims[1], cols = images.dims[2];
  if (labels.dims[0] != n)
    fail(labels_path, ": holds ", labels.dims[0], " labels but ", images_path, " holds ", n,
         " images");
  if (n == 0) fail(images_path, ": holds no images");
  if (rows == 0 || cols == 0 || rows > uint32_t(INT32_MAX) || cols > uint32_t(INT32_MAX))
    fail(images_path, ": images of ", rows, "x", cols, " pixels are not supported");

  const std::unique_ptr<RecordWriter> writer = create_record_writer(output_path, backend);
  Datum datum;
  datum.set_channels(1);
  datum.set_height(int(rows));
  datum.set_width(int(cols));
  const size_t pixels = size_t(rows) * cols;
  std::string value;
  char key[16];
  for (uint32_t i = 0; i < n; ++i) {
    datum.set_data(images.data.data() + size_t(i) * pixels, pixels);
    datum.set_label(labels.data[i]);
    datum.SerializeToString(&value);
    std::snprintf(key, sizeof key, "%08u", i);
    writer->put(key, value);
  }
  writer->commit();
  return n;
}

}  // namespace crema
