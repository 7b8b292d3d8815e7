// convert_imageset: a folder of images and a "<path> <label>" list file to an LMDB of Datum
// records (keys "%08d_<path>"), the input of the Data layer, with Caffe's flags.
#include "backends/convert_imageset.h"

#include "core/rng.h"
#include "tool_main.h"

DEFINE_bool(gray, false, "Decode the images as gray (1 channel) instead of color (3, BGR)");
DEFINE_bool(shuffle, false, "Shuffle the list before writing");
DEFINE_int64(seed, -1, "Seed of --shuffle; negative: a random seed");
DEFINE_string(backend, "lmdb", "The db backend: lmdb or leveldb");
DEFINE_int32(resize_width, 0, "Resize the images to this width (with --resize_height)");
DEFINE_int32(resize_height, 0, "Resize the images to this height (with --resize_width)");
DEFINE_bool(check_size, false, "Require every image to have the first image's size");
DEFINE_bool(encoded, false, "Store the encoded images instead of raw pixels");
DEFINE_string(encode_type, "",
              "Format of the encoded images (jpg, png, ...); default: each "
              "file's own");

int main(int argc, char** argv) {
  return crema::tools::run_tool(
      argc, argv, "convert_imageset",
      "convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME\n"
      "Converts the images LISTFILE names (lines of '<path> <label>', each path relative to\n"
      "ROOTFOLDER/, which is prefixed as written) into a new LMDB DB_NAME of Datum records.",
      3, 3, [](const std::vector<std::string>& args) {
        crema::seed_thread_rng(FLAGS_seed);
        crema::ConvertImagesetOptions o;
        o.gray = FLAGS_gray;
        o.shuffle = FLAGS_shuffle;
        o.resize_height = FLAGS_resize_height;
        o.resize_width = FLAGS_resize_width;
        o.encoded = FLAGS_encoded;
        o.encode_type = FLAGS_encode_type;
        o.check_size = FLAGS_check_size;
        o.backend = FLAGS_backend;
        const size_t n = crema::convert_imageset(args[0], args[1], args[2], o);
        std::printf("convert_imageset: wrote %zu records to %s\n", n, args[2].c_str());
        return 0;
      });
}
