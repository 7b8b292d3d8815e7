// Image list -> LMDB of Datum.
#include "backends/convert_imageset.h"

#include <glog/logging.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/errors.h"
#include "core/rng.h"
#include "crema.pb.h"
#include "data/datum.h"
#include "data/image_io.h"
#include "data/image_list.h"
#include "data/jpeg_codec.h"
#include "data/record_db.h"

namespace crema {

size_t convert_imageset(const std::string& root_folder, const std::string& list_file,
                        const std::string& db_path, const ConvertImagesetOptions& options) {
  const RecordBackend backend = parse_record_backend(options.backend);
  if (options.resize_height < 0 || options.resize_width < 0 ||
      (options.resize_height > 0) != (options.resize_width > 0))
    fail("resize needs both resize_height and resize_width > 0 (or neither); got ",
         options.resize_height, " and ", options.resize_width);
  if (!options.encode_type.empty() && !options.encoded)
    fail("encode_type '", options.encode_type, "' needs --encoded");
  std::error_code ec;
  if (std::filesystem::exists(db_path, ec))
    fail(db_path, ": already exists; remove it or choose another output");
  std::vector<ImageListEntry> entries = read_image_list(list_file);
  if (!image_io_available() && !jpeg_codec_available())
    fail(list_file, ": cannot read images: crema was built without OpenCV and libjpeg");
  if (options.encoded && !options.encode_type.empty()) check_encode_type(options.encode_type);
  if (options.shuffle) std::shuffle(entries.begin(), entries.end(), thread_rng());

  ImageReadOptions read;
  read.color = options.gray ? ColorMode::kGray : ColorMode::kColor;
  read.new_height = options.resize_height;
  read.new_width = options.resize_width;
  read.encoded = options.encoded;
  read.encode_type = options.encode_type;
  size_t written = 0;
  try {
    const std::unique_ptr<RecordWriter> writer = create_record_writer(db_path, backend);
    Datum datum;
    ChwImage image;
    std::string value;
    int first_c = 0, first_h = 0, first_w = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      const ImageListEntry& e = entries[i];
      const std::string path = root_folder + e.path;
      const std::string where = detail::make_message(list_file, ":", e.line);
      try {
        read_image_to_datum(path, e.label, read, &datum);
      } catch (const Error& err) {
        // As Caffe: an image that cannot be read is left out, with a warning, and the rest go on.
        LOG(WARNING) << where << ": " << err.what() << "; skipped";
        continue;
      }
      if (options.check_size) {
        // Encoded records are decoded to learn their size.
        datum_to_chw(datum, where + ": " + path, ColorMode::kNative, &image);
        if (written == 0) {
          first_c = image.channels;
          first_h = image.height;
          first_w = image.width;
        } else if (image.channels != first_c || image.height != first_h || image.width != first_w) {
          fail(where, ": ", path, " is ", image.channels, "x", image.height, "x", image.width,
               " but the first image is ", first_c, "x", first_h, "x", first_w,
               " (--check_size); resize them with --resize_height and --resize_width");
        }
      }
      char index[16];
      std::snprintf(index, sizeof index, "%08zu", i);
      datum.SerializeToString(&value);
      writer->put(std::string(index) + "_" + e.path, value);
      ++written;
      if (written % 1000 == 0) LOG(INFO) << "Processed " << written << " files.";
    }
    if (written == 0) fail(list_file, ": none of the ", entries.size(), " images could be read");
    writer->commit();
  } catch (...) {
    std::filesystem::remove_all(db_path, ec);
    throw;
  }
  LOG(INFO) << "Processed " << written << " files.";
  return written;
}

}  // namespace crema
