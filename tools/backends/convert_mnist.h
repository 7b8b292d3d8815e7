// MNIST-style IDX to LMDB (or LevelDB) conversion, behind tools/convert_mnist: each image becomes a
// Datum (1 channel, rows x cols raw uint8 pixels, its label) under the key "%08d" of its index, as
// Caffe's convert_mnist_data writes them, so the LMDBs are interchangeable with Caffe's.
#pragma once

#include <cstddef>
#include <string>

#include "data/record_db.h"

namespace crema {

// Converts and returns the number of records written. Both inputs are read and checked (equal
// counts) before the output is created; an existing output is an error. Throws crema::Error
// naming the offending file.
size_t convert_mnist(const std::string& images_path, const std::string& labels_path,
                     const std::string& output_path, RecordBackend backend = RecordBackend::kLmdb);

}  // namespace crema
