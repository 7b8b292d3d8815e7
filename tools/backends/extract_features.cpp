// Net blobs -> LMDBs of float Datum records.
#include "backends/extract_features.h"

#include <glog/logging.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

#include "core/errors.h"
#include "core/net.h"
#include "core/upgrade_proto.h"
#include "crema.pb.h"
#include "data/record_db.h"

namespace crema {

std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> parts;
  std::stringstream ss(list);
  for (std::string part; std::getline(ss, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

size_t extract_features(const ExtractFeaturesRequest& r) {
  if (r.blobs.empty()) fail("no blob names given");
  if (r.blobs.size() != r.databases.size())
    fail(r.blobs.size(), " blob names but ", r.databases.size(),
         " database names: give one database per blob");
  if (r.num_mini_batches <= 0) fail("num_mini_batches must be positive; got ", r.num_mini_batches);
  std::error_code ec;
  for (const std::string& db : r.databases)
    if (std::filesystem::exists(db, ec))
      fail(db, ": already exists; remove it or choose another output");

  Handle handle(r.device, r.device_id);
  Net<float> net(load_net_param_text(r.net), TEST, r.device);
  require_weights_copied(net.copy_trained_layers_from(load_net_param_binary(r.weights)), r.weights);
  std::vector<Tensor<float>*> blobs;
  for (const std::string& name : r.blobs) {
    if (!net.has_blob(name)) {
      std::ostringstream known;
      for (size_t i = 0; i < net.blob_names().size(); ++i)
        known << (i ? ", " : "") << net.blob_names()[i];
      fail(r.net, ": the net has no blob \"", name, "\" (blobs: ", known.str(), ")");
    }
    blobs.push_back(net.blob_by_name(name).get());
  }

  std::vector<std::unique_ptr<RecordWriter>> writers;
  std::vector<size_t> written(blobs.size(), 0);  // examples per database so far
  try {
    for (const std::string& db : r.databases)
      writers.push_back(create_record_writer(db, r.backend));
    Datum datum;
    std::string value;
    std::vector<float> host;
    for (int batch = 0; batch < r.num_mini_batches; ++batch) {
      net.forward(handle);
      for (size_t b = 0; b < blobs.size(); ++b) {
        const Tensor<float>& t = *blobs[b];
        const int64_t num = t.num(), dim = t.count() / std::max<int64_t>(num, 1);
        host = t.data_vector();
        datum.Clear();
        datum.set_channels(int(t.channels()));
        datum.set_height(int(t.height()));
        datum.set_width(int(t.width()));
        for (int64_t n = 0; n < num; ++n) {
          datum.clear_float_data();
          datum.mutable_float_data()->Add(host.begin() + n * dim, host.begin() + (n + 1) * dim);
          datum.SerializeToString(&value);
          char key[24];
          std::snprintf(key, sizeof key, "%010zu", written[b]++);
          writers[b]->put(key, value);
        }
      }
      LOG_EVERY_N(INFO, 100) << "Extracted features of " << written[0] << " examples.";
    }
    for (auto& w : writers) w->commit();
  } catch (...) {
    writers.clear();
    for (const std::string& db : r.databases) std::filesystem::remove_all(db, ec);
    throw;
  }
  LOG(INFO) << "Extracted features of " << written[0] << " examples.";
  return written[0];
}

}  // namespace crema
