// Feature extraction, behind tools/extract_features (Caffe's tool of that name): runs a trained
// net in the TEST phase for num_mini_batches forward passes and writes, for each requested blob,
// one Datum per example to its own new LMDB: float_data holds the example's C*H*W values, the
// shape fields the blob's channels, height and width (1 for missing axes), the key is the
// example's index as "%010d" (0, 1, ... across batches), as Caffe writes them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "data/record_db.h"
#include "primitives/types.h"

namespace crema {

struct ExtractFeaturesRequest {
  std::string weights;                 // a .caffemodel
  std::string net;                     // the net prototxt (its data layer feeds the passes)
  std::vector<std::string> blobs;      // blob names
  std::vector<std::string> databases;  // one new database per blob
  RecordBackend backend = RecordBackend::kLmdb;
  int num_mini_batches = 0;
  prim::Device device = prim::Device::kCPU;
  int device_id = 0;
};

// Returns the number of examples written to each database. Throws crema::Error for unequal
// blob/database counts, a non-positive num_mini_batches, an unknown blob (listing the net's
// blobs), an existing output, and any error of the net or its weights. Outputs are created only
// after the net is built and every blob name is checked.
size_t extract_features(const ExtractFeaturesRequest& request);

// Splits "a,b,c" into its non-empty parts.
std::vector<std::string> split_commas(const std::string& list);

}  // namespace crema
