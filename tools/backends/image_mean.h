// Mean image of an LMDB or LevelDB of Datum records, behind tools/compute_image_mean (Caffe's tool
// of that name):
//
//   mean[c][y][x] = (1 / N) * sum_n image_n[c][y][x]        over the N records
//
// stored as a BlobProto of shape 1 x C x H x W (the legacy num/channels/height/width fields, as
// Caffe writes it), the mean_file of transform_param. The per-channel means are the means of the
// mean image over its H x W pixels.
#pragma once

#include <string>
#include <vector>

#include "crema.pb.h"
#include "data/record_db.h"

namespace crema {

struct ImageMean {
  BlobProto blob;                     // 1 x C x H x W
  std::vector<double> channel_means;  // C values
  size_t count = 0;                   // records averaged
};

// Reads every record once (raw or encoded). Throws crema::Error naming the DB and the key for a
// corrupt record or one whose shape differs from the first record's.
ImageMean compute_image_mean(const std::string& db_path,
                             RecordBackend backend = RecordBackend::kLmdb);

}  // namespace crema
