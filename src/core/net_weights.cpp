// Net: trained weights in and out (.caffemodel layers copied by name, shared with test nets,
// written back).
#include <glog/logging.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/net.h"

namespace crema {
namespace {

// The index of the first value of a BlobProto that is NaN or infinite, or -1.
int64_t first_non_finite(const BlobProto& b) {
  for (int i = 0; i < b.double_data_size(); ++i)
    if (!std::isfinite(b.double_data(i))) return i;
  for (int i = 0; i < b.data_size(); ++i)
    if (!std::isfinite(b.data(i))) return i;
  return -1;
}

// An empty blob: one an HDF5 weights file lacks (hdf5_weights.h).
bool is_absent(const BlobProto& b) {
  return !b.has_shape() && !b.has_num() && !b.has_channels() && !b.has_height() && !b.has_width() &&
         b.data_size() == 0 && b.double_data_size() == 0;
}

// Up to four names, then how many more.
std::string some_names(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 4; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > 4) s += " and " + std::to_string(names.size() - 4) + " more";
  return s;
}

}  // namespace

void require_weights_copied(const WeightsCopy& copy, const std::string& file) {
  if (copy.copied.empty()) {
    if (copy.ignored.empty()) fail(file, ": holds no layer with weights");
    const std::string net =
        copy.unfilled.empty() ? "" : " (the net's: " + some_names(copy.unfilled) + ")";
    fail(file, ": none of its layers with weights (", some_names(copy.ignored),
         ") is a layer of the net", net);
  }
  if (copy.unfilled.empty() && copy.ignored.empty()) return;
  LOG(WARNING) << file << ": copied the weights of " << copy.copied.size() << " layers; "
               << copy.unfilled.size() << " layers of the net keep their fillers"
               << (copy.unfilled.empty() ? "" : " (" + some_names(copy.unfilled) + ")") << "; "
               << copy.ignored.size() << " layers of the file match none of the net's"
               << (copy.ignored.empty() ? "" : " (" + some_names(copy.ignored) + ")");
}

template <typename Dtype>
WeightsCopy Net<Dtype>::copy_trained_layers_from(const NetParameter& trained) {
  WeightsCopy copy;
  std::vector<bool> filled(layers_.size(), false);
  for (const LayerParameter& src : trained.layer()) {
    int target = -1;
    for (int i = 0; i < num_layers(); ++i)
      if (layer_names_[i] == src.name()) target = i;
    if (target < 0) {
      LOG(INFO) << "Ignoring source layer " << src.name();
      if (src.blobs_size() > 0) copy.ignored.push_back(src.name());
      continue;
    }
    LOG(INFO) << "Copying source layer " << src.name();
    auto& blobs = layers_[size_t(target)]->blobs();
    // Caffe's HDF5 weights hold a shared parameter once, under its owner: another layer's entry
    // lacks it (an empty blob, or fewer blobs), which is fine where the net shares it too.
    const auto shared = [&](int k) {
      for (size_t id = 0; id < param_layer_indices_.size(); ++id)
        if (param_layer_indices_[id] == std::pair<int, int>(target, k))
          return param_owners_[id] != -1;
      return false;
    };
    bool missing_shared = src.blobs_size() < int(blobs.size());
    for (int k = src.blobs_size(); k < int(blobs.size()); ++k) missing_shared &= shared(k);
    CREMA_REQUIRE(int(blobs.size()) == src.blobs_size() || missing_shared, "layer ", src.name(),
                  ": the weights hold ", src.blobs_size(), " blobs but the net's layer has ",
                  blobs.size());
    for (int k = 0; k < src.blobs_size(); ++k) {
      if (is_absent(src.blobs(k))) {
        CREMA_REQUIRE(shared(k), "layer ", src.name(), ": the weights lack blob ", k,
                      ", which the net's layer does not share with another");
        continue;
      }
      if (const int64_t bad = first_non_finite(src.blobs(k)); bad >= 0)
        fail("layer ", src.name(), ", blob ", k, ": value ", bad,
             " is not finite; trained weights must be finite numbers");
      try {
        blobs[k]->from_proto(src.blobs(k), /*reshape=*/false);
      } catch (const Error& e) {
        fail("layer ", src.name(), ", blob ", k, ": ", e.what());
      }
    }
    if (src.blobs_size() > 0 && !filled[size_t(target)]) copy.copied.push_back(src.name());
    filled[size_t(target)] = true;
  }
  for (size_t i = 0; i < layers_.size(); ++i)
    if (!filled[i] && !layers_[i]->blobs().empty()) copy.unfilled.push_back(layer_names_[i]);
  return copy;
}

template <typename Dtype>
void Net<Dtype>::share_trained_layers_with(const Net& other) {
  for (int i = 0; i < other.num_layers(); ++i) {
    Layer<Dtype>* target = nullptr;
    for (int t = 0; t < num_layers(); ++t)
      if (layer_names_[t] == other.layer_names_[i]) target = layers_[t].get();
    if (!target) continue;
    auto& src = other.layers_[i]->blobs();
    auto& dst = target->blobs();
    CREMA_REQUIRE(src.size() == dst.size(), "layer ", other.layer_names_[i],
                  ": nets disagree on the number of parameter blobs");
    for (size_t k = 0; k < src.size(); ++k) {
      CREMA_REQUIRE(src[k]->shape() == dst[k]->shape(), "layer ", other.layer_names_[i],
                    ": nets disagree on the shape of parameter ", k);
      dst[k]->share_data(*src[k]);
    }
  }
}

template <typename Dtype>
void Net<Dtype>::to_proto(NetParameter* param, bool write_diff) const {
  param->Clear();
  param->set_name(name_);
  for (const auto& layer : layers_) {
    LayerParameter* lp = param->add_layer();
    *lp = layer->param();
    lp->clear_blobs();
    lp->clear_source_location();  // where this run read it from, not part of the net
    for (const auto& blob : layer->blobs()) blob->to_proto(lp->add_blobs(), write_diff);
  }
}

template WeightsCopy Net<float>::copy_trained_layers_from(const NetParameter&);
template WeightsCopy Net<double>::copy_trained_layers_from(const NetParameter&);
template void Net<float>::share_trained_layers_with(const Net&);
template void Net<double>::share_trained_layers_with(const Net&);
template void Net<float>::to_proto(NetParameter*, bool) const;
template void Net<double>::to_proto(NetParameter*, bool) const;

}  // namespace crema
