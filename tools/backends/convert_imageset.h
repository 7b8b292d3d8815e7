// Image folder + list file -> LMDB of Datum, behind tools/convert_imageset (Caffe's tool of that
// name): each listed image, read as read_image_to_datum reads it (gray or color, resized,
// raw or encoded), becomes a record under the key "%08d_<path>" of its position in the (possibly
// shuffled) list, as Caffe writes them, so the LMDBs are interchangeable with Caffe's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace crema {

struct ConvertImagesetOptions {
  bool gray = false;      // decode as 1 channel instead of 3 (BGR)
  bool shuffle = false;   // shuffle the list (seeded from crema::thread_rng) before writing
  int resize_height = 0;  // resize when both are > 0
  int resize_width = 0;
  bool encoded = false;     // store encoded images (see image_io.h)
  std::string encode_type;  // format of the encoded images; empty: each file's own
  bool check_size = false;  // require every image to have the first image's size
  std::string backend = "lmdb";
};

// Converts and returns the number of records written. An image that cannot be read or decoded
// is skipped with a warning naming the list file, line and path, as Caffe does; when none can
// be, or on any other error, the partial output is removed and a crema::Error thrown. An
// existing output is an error (nothing is overwritten).
size_t convert_imageset(const std::string& root_folder, const std::string& list_file,
                        const std::string& db_path, const ConvertImagesetOptions& options);

}  // namespace crema
