// extract_features: runs a trained net and stores the values of chosen blobs, one Datum of
// float_data per example, in one LMDB (or LevelDB) per blob (Caffe's tool of that name, same
// arguments).
#include "backends/extract_features.h"

#include "core/errors.h"
#include "primitives/handle.h"
#include "tool_main.h"

int main(int argc, char** argv) {
  return crema::tools::run_tool(
      argc, argv, "extract_features",
      "extract_features PRETRAINED_NET_PARAM FEATURE_EXTRACTION_PROTO_FILE\n"
      "    BLOB_NAME1[,NAME2,...] SAVE_FEATURE_DB_NAME1[,NAME2,...] NUM_MINI_BATCHES\n"
      "    [lmdb|leveldb] [CPU|GPU] [DEVICE_ID=0]\n"
      "Runs the net (TEST phase, weights from the .caffemodel) NUM_MINI_BATCHES times and writes\n"
      "each named blob to its own new database: one Datum of float_data per example, keys\n"
      "%010d.",
      5, 8, [](const std::vector<std::string>& args) {
        crema::ExtractFeaturesRequest r;
        r.weights = args[0];
        r.net = args[1];
        r.blobs = crema::split_commas(args[2]);
        r.databases = crema::split_commas(args[3]);
        try {
          size_t used = 0;
          r.num_mini_batches = std::stoi(args[4], &used);
          if (used != args[4].size()) throw std::invalid_argument(args[4]);
        } catch (const std::exception&) {
          crema::fail("NUM_MINI_BATCHES must be an integer; got '", args[4], "'");
        }
        if (args.size() > 5) r.backend = crema::parse_record_backend(args[5]);
        if (args.size() > 6) {
          if (args[6] == "GPU") {
            if (!crema::prim::cuda_available())
              crema::fail("GPU requested but this build has no CUDA or no GPU is visible");
            r.device = crema::prim::Device::kCUDA;
          } else if (args[6] != "CPU") {
            crema::fail("the device must be CPU or GPU; got '", args[6], "'");
          }
        }
        if (args.size() > 7) {
          try {
            r.device_id = std::stoi(args[7]);
          } catch (const std::exception&) {
            crema::fail("DEVICE_ID must be an integer; got '", args[7], "'");
          }
        }
        const size_t n = crema::extract_features(r);
        std::printf("extract_features: wrote %zu examples to each of %zu databases\n", n,
                    r.databases.size());
        return 0;
      });
}
