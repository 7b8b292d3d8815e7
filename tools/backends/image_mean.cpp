// Mean image of an LMDB or LevelDB.
#include "backends/image_mean.h"

#include "core/errors.h"
#include "data/datum.h"
#include "data/record_db.h"

namespace crema {

ImageMean compute_image_mean(const std::string& db_path, RecordBackend backend) {
  const std::unique_ptr<RecordReader> db = open_record_reader(db_path, backend);
  RecordReader& reader = *db;
  Datum datum;
  ChwImage image;
  std::vector<double> sum;
  int c = 0, h = 0, w = 0;
  for (size_t i = 0; i < reader.size(); ++i, reader.next()) {
    decode_datum(reader.value(), db_path, reader.key(), &datum);
    const std::string where = detail::make_message(db_path, ": record '", reader.key(), "'");
    datum_to_chw(datum, where, ColorMode::kNative, &image);
    if (i == 0) {
      c = image.channels;
      h = image.height;
      w = image.width;
      sum.assign(image.data.size(), 0.0);
    } else if (image.channels != c || image.height != h || image.width != w) {
      fail(where, ": shape ", image.channels, "x", image.height, "x", image.width,
           " differs from the first record's ", c, "x", h, "x", w,
           "; a mean image needs every record of the same shape");
    }
    for (size_t j = 0; j < sum.size(); ++j) sum[j] += image.data[j];
  }
  ImageMean mean;
  mean.count = reader.size();
  BlobProto& blob = mean.blob;
  blob.set_num(1);
  blob.set_channels(c);
  blob.set_height(h);
  blob.set_width(w);
  blob.mutable_data()->Reserve(int(sum.size()));
  for (double s : sum) blob.add_data(float(s / double(mean.count)));
  const size_t plane = size_t(h) * w;
  mean.channel_means.assign(size_t(c), 0.0);
  for (int k = 0; k < c; ++k) {
    double s = 0;
    for (size_t j = 0; j < plane; ++j) s += blob.data(int(k * plane + j));
    mean.channel_means[k] = s / double(plane);
  }
  return mean;
}

}  // namespace crema
