// CIFAR-10 binary batches to LMDB or LevelDB, behind tools/convert_cifar_data (Caffe's tool of
// that name): <input>/data_batch_1.bin ... data_batch_5.bin become <output>/cifar10_train_lmdb
// (or _leveldb) and <input>/test_batch.bin <output>/cifar10_test_lmdb. Each record of a batch file
// is a label byte and 3 x 32 x 32 pixel bytes (the red, green and blue planes); it becomes a Datum
// of 3 channels with those bytes as they are and that label, under the key "%05d" of its index
// counted over the set's files, as Caffe writes them.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "data/record_db.h"

namespace crema {

// Returns the train and test record counts. Every input is read and checked (its size a whole
// number of records, labels 0-9) before an output is created; existing outputs are an error.
// Throws crema::Error naming the offending file.
std::pair<size_t, size_t> convert_cifar(const std::string& input_folder,
                                        const std::string& output_folder,
                                        RecordBackend backend = RecordBackend::kLmdb);

}  // namespace crema
