// CIFAR-10 binary batches -> two LMDBs of Datum.
#include "backends/convert_cifar.h"

#include <sys/stat.h>

#include <cstdio>
#include <vector>

#include "core/errors.h"
#include "crema.pb.h"
#include "data/image_io.h"

namespace crema {
namespace {

constexpr size_t kPixels = 3 * 32 * 32;
constexpr size_t kRecord = 1 + kPixels;

// The records of one set's files, read whole and checked.
std::string read_set(const std::string& folder, const std::vector<std::string>& files) {
  std::string all;
  for (const std::string& name : files) {
    const std::string path = folder + "/" + name;
    const std::string bytes = read_file_bytes(path);
    if (bytes.empty() || bytes.size() % kRecord != 0)
      fail(path, ": ", bytes.size(), " bytes is not a whole number of CIFAR-10 records (", kRecord,
           " bytes each: a label and 3x32x32 pixels)");
    for (size_t r = 0; r < bytes.size(); r += kRecord)
      if (static_cast<unsigned char>(bytes[r]) > 9)
        fail(path, ": record ", r / kRecord, " has label ",
             int(static_cast<unsigned char>(bytes[r])), "; CIFAR-10 labels are 0-9");
    all += bytes;
  }
  return all;
}

void write_set(const std::string& records, const std::string& output, RecordBackend backend) {
  const std::unique_ptr<RecordWriter> writer = create_record_writer(output, backend);
  Datum datum;
  datum.set_channels(3);
  datum.set_height(32);
  datum.set_width(32);
  std::string value;
  char key[24];
  for (size_t i = 0; i * kRecord < records.size(); ++i) {
    const char* record = records.data() + i * kRecord;
    datum.set_label(static_cast<unsigned char>(record[0]));
    datum.set_data(record + 1, kPixels);
    datum.SerializeToString(&value);
    std::snprintf(key, sizeof key, "%05zu", i);
    writer->put(key, value);
  }
  writer->commit();
}

}  // namespace

std::pair<size_t, size_t> convert_cifar(const std::string& input_folder,
                                        const std::string& output_folder, RecordBackend backend) {
  const std::string suffix = std::string("_") + record_backend_name(backend);
  const std::string train_out = output_folder + "/cifar10_train" + suffix;
  const std::string test_out = output_folder + "/cifar10_test" + suffix;
  struct stat st;
  for (const std::string& out : {train_out, test_out})
    if (::stat(out.c_str(), &st) == 0)
      fail(out, ": already exists; remove it or choose another output folder");
  const std::string train =
      read_set(input_folder, {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                              "data_batch_4.bin", "data_batch_5.bin"});
  const std::string test = read_set(input_folder, {"test_batch.bin"});
  write_set(train, train_out, backend);
  write_set(test, test_out, backend);
  return {train.size() / kRecord, test.size() / kRecord};
}

}  // namespace crema
