// compute_image_mean: the mean image of an LMDB or LevelDB of Datum records, written as a
// .binaryproto (transform_param's mean_file), with the per-channel means printed as Caffe prints
// them.
#include "backends/image_mean.h"
#include "core/errors.h"
#include "core/proto_io.h"
#include "tool_main.h"

DEFINE_string(backend, "lmdb", "The db backend: lmdb or leveldb");

int main(int argc, char** argv) {
  return crema::tools::run_tool(
      argc, argv, "compute_image_mean",
      "compute_image_mean [FLAGS] INPUT_DB [OUTPUT_FILE]\n"
      "Computes the mean image of INPUT_DB and writes it to OUTPUT_FILE (a .binaryproto).",
      1, 2, [](const std::vector<std::string>& args) {
        const crema::ImageMean mean =
            crema::compute_image_mean(args[0], crema::parse_record_backend(FLAGS_backend));
        if (args.size() > 1) crema::write_binary_proto_atomic(mean.blob, args[1]);
        std::printf("Averaged %zu records\nNumber of channels: %zu\n", mean.count,
                    mean.channel_means.size());
        for (size_t c = 0; c < mean.channel_means.size(); ++c)
          std::printf("mean_value channel [%zu]: %g\n", c, mean.channel_means[c]);
        return 0;
      });
}
