// V0 nets (Caffe before V1: `layers { layer { type: "conv" } }`, padding layers) upgraded to V1
// layers, which the V1 upgrade (upgrade_proto.cpp) then turns into the current format.
#include "core/upgrade_v0.h"

#include <map>
#include <optional>
#include <string>

#include "core/errors.h"

namespace crema {

namespace pb = google::protobuf;

using V1Type = V1LayerParameter::LayerType;

bool net_has_v0_layers(const NetParameter& net) {
  for (const auto& l : net.layers()) {
    if (l.has_layer()) return true;
  }
  return false;
}

namespace {

// V0 spelled layer types as lower-case strings.
std::optional<V1Type> v0_type_to_v1(const std::string& type) {
  static const std::map<std::string, V1Type> kTypes = {
      {"accuracy", V1LayerParameter::ACCURACY},
      {"bnll", V1LayerParameter::BNLL},
      {"concat", V1LayerParameter::CONCAT},
      {"conv", V1LayerParameter::CONVOLUTION},
      {"data", V1LayerParameter::DATA},
      {"dropout", V1LayerParameter::DROPOUT},
      {"euclidean_loss", V1LayerParameter::EUCLIDEAN_LOSS},
      {"flatten", V1LayerParameter::FLATTEN},
      {"hdf5_data", V1LayerParameter::HDF5_DATA},
      {"hdf5_output", V1LayerParameter::HDF5_OUTPUT},
      {"im2col", V1LayerParameter::IM2COL},
      {"images", V1LayerParameter::IMAGE_DATA},
      {"infogain_loss", V1LayerParameter::INFOGAIN_LOSS},
      {"innerproduct", V1LayerParameter::INNER_PRODUCT},
      {"lrn", V1LayerParameter::LRN},
      {"multinomial_logistic_loss", V1LayerParameter::MULTINOMIAL_LOGISTIC_LOSS},
      {"pool", V1LayerParameter::POOLING},
      {"relu", V1LayerParameter::RELU},
      {"sigmoid", V1LayerParameter::SIGMOID},
      {"softmax", V1LayerParameter::SOFTMAX},
      {"softmax_loss", V1LayerParameter::SOFTMAX_LOSS},
      {"split", V1LayerParameter::SPLIT},
      {"tanh", V1LayerParameter::TANH},
      {"window_data", V1LayerParameter::WINDOW_DATA},
  };
  const auto it = kTypes.find(type);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

// V0 had explicit "padding" layers in front of conv and pool layers. They are removed here and
// their pad moved into the layer they fed, which then reads the padding layer's input directly.
void fold_v0_padding(NetParameter* net, const std::string& source) {
  std::map<std::string, int> padded_by;  // blob -> index of the padding layer producing it
  pb::RepeatedPtrField<V1LayerParameter> kept;
  for (int i = 0; i < net->layers_size(); ++i) {
    const V1LayerParameter& l = net->layers(i);
    if (l.has_layer() && l.layer().type() == "padding") {
      CREMA_REQUIRE(l.bottom_size() == 1 && l.top_size() == 1, source, ": V0 padding ",
                    upgrade_layer_label(l.layer().name(), i), " must have one bottom and one top");
      padded_by[l.top(0)] = i;
      continue;
    }
    V1LayerParameter upgraded = l;
    for (int b = 0; b < upgraded.bottom_size(); ++b) {
      const auto it = padded_by.find(upgraded.bottom(b));
      if (it == padded_by.end()) continue;
      const V1LayerParameter& pad = net->layers(it->second);
      const std::string type = upgraded.has_layer() ? upgraded.layer().type() : "";
      CREMA_REQUIRE(type == "conv" || type == "pool", source, ": V0 padding ",
                    upgrade_layer_label(pad.layer().name(), it->second), " feeds ",
                    upgrade_layer_label(upgraded.layer().name(), i), " of type '", type,
                    "'; only conv and pool layers can absorb padding");
      upgraded.mutable_layer()->set_pad(pad.layer().pad());
      upgraded.set_bottom(b, pad.bottom(0));
    }
    // A later layer writing the same blob name replaces the padded blob.
    for (const auto& top : upgraded.top()) padded_by.erase(top);
    *kept.Add() = std::move(upgraded);
  }
  net->mutable_layers()->Swap(&kept);
}

// Converts one `layers { layer { ... } bottom: top: }` entry to a V1 layer.
void upgrade_v0_layer(const V1LayerParameter& in, int index, const std::string& source,
                      V1LayerParameter* out) {
  *out = in;
  if (!in.has_layer()) return;  // already V1
  out->clear_layer();
  const V0LayerParameter& v0 = in.layer();
  const std::string& t = v0.type();
  const std::string where =
      detail::make_message(source, ": V0 ", upgrade_layer_label(v0.name(), index));
  if (v0.has_name()) out->set_name(v0.name());
  const auto type = v0_type_to_v1(t);
  CREMA_REQUIRE(type.has_value(), where, ": unknown V0 layer type '", t, "'");
  out->set_type(*type);
  out->mutable_blobs()->CopyFrom(v0.blobs());
  out->mutable_blobs_lr()->CopyFrom(v0.blobs_lr());
  out->mutable_weight_decay()->CopyFrom(v0.weight_decay());

  const bool conv = t == "conv", ip = t == "innerproduct", pool = t == "pool";
  const bool data = t == "data", images = t == "images", window = t == "window_data";
  const bool hdf5 = t == "hdf5_data";
  auto require = [&](bool applies, const char* field) {
    CREMA_REQUIRE(applies, where, ": field '", field, "' does not apply to type '", t, "'");
  };
  if (v0.has_num_output()) {
    require(conv || ip, "num_output");
    if (conv) out->mutable_convolution_param()->set_num_output(v0.num_output());
    if (ip) out->mutable_inner_product_param()->set_num_output(v0.num_output());
  }
  if (v0.has_biasterm()) {
    require(conv || ip, "biasterm");
    if (conv) out->mutable_convolution_param()->set_bias_term(v0.biasterm());
    if (ip) out->mutable_inner_product_param()->set_bias_term(v0.biasterm());
  }
  if (v0.has_weight_filler()) {
    require(conv || ip, "weight_filler");
    if (conv) *out->mutable_convolution_param()->mutable_weight_filler() = v0.weight_filler();
    if (ip) *out->mutable_inner_product_param()->mutable_weight_filler() = v0.weight_filler();
  }
  if (v0.has_bias_filler()) {
    require(conv || ip, "bias_filler");
    if (conv) *out->mutable_convolution_param()->mutable_bias_filler() = v0.bias_filler();
    if (ip) *out->mutable_inner_product_param()->mutable_bias_filler() = v0.bias_filler();
  }
  if (v0.has_pad()) {
    require(conv || pool, "pad");
    if (conv) out->mutable_convolution_param()->add_pad(v0.pad());
    if (pool) out->mutable_pooling_param()->set_pad(v0.pad());
  }
  if (v0.has_kernelsize()) {
    require(conv || pool, "kernelsize");
    if (conv) out->mutable_convolution_param()->add_kernel_size(v0.kernelsize());
    if (pool) out->mutable_pooling_param()->set_kernel_size(v0.kernelsize());
  }
  if (v0.has_group()) {
    require(conv, "group");
    out->mutable_convolution_param()->set_group(v0.group());
  }
  if (v0.has_stride()) {
    require(conv || pool, "stride");
    if (conv) out->mutable_convolution_param()->add_stride(v0.stride());
    if (pool) out->mutable_pooling_param()->set_stride(v0.stride());
  }
  if (v0.has_pool()) {
    require(pool, "pool");
    // The two PoolMethod enums have the same values.
    out->mutable_pooling_param()->set_pool(static_cast<PoolingParameter::PoolMethod>(v0.pool()));
  }
  if (v0.has_dropout_ratio()) {
    require(t == "dropout", "dropout_ratio");
    out->mutable_dropout_param()->set_dropout_ratio(v0.dropout_ratio());
  }
  const bool lrn = t == "lrn";
  if (v0.has_local_size()) {
    require(lrn, "local_size");
    out->mutable_lrn_param()->set_local_size(v0.local_size());
  }
  if (v0.has_alpha()) {
    require(lrn, "alpha");
    out->mutable_lrn_param()->set_alpha(v0.alpha());
  }
  if (v0.has_beta()) {
    require(lrn, "beta");
    out->mutable_lrn_param()->set_beta(v0.beta());
  }
  if (v0.has_k()) {
    require(lrn, "k");
    out->mutable_lrn_param()->set_k(v0.k());
  }
  if (v0.has_source()) {
    require(data || images || window || hdf5 || t == "infogain_loss", "source");
    if (data) out->mutable_data_param()->set_source(v0.source());
    if (images) out->mutable_image_data_param()->set_source(v0.source());
    if (window) out->mutable_window_data_param()->set_source(v0.source());
    if (hdf5) out->mutable_hdf5_data_param()->set_source(v0.source());
    if (t == "infogain_loss") out->mutable_infogain_loss_param()->set_source(v0.source());
  }
  // V0 preprocessing goes straight to its current home.
  if (v0.has_scale()) {
    require(data || images || window, "scale");
    out->mutable_transform_param()->set_scale(v0.scale());
  }
  if (v0.has_meanfile()) {
    require(data || images || window, "meanfile");
    out->mutable_transform_param()->set_mean_file(v0.meanfile());
  }
  if (v0.has_cropsize()) {
    require(data || images || window, "cropsize");
    out->mutable_transform_param()->set_crop_size(v0.cropsize());
  }
  if (v0.has_mirror()) {
    require(data || images || window, "mirror");
    out->mutable_transform_param()->set_mirror(v0.mirror());
  }
  if (v0.has_batchsize()) {
    require(data || images || window || hdf5, "batchsize");
    if (data) out->mutable_data_param()->set_batch_size(v0.batchsize());
    if (images) out->mutable_image_data_param()->set_batch_size(v0.batchsize());
    if (window) out->mutable_window_data_param()->set_batch_size(v0.batchsize());
    if (hdf5) out->mutable_hdf5_data_param()->set_batch_size(v0.batchsize());
  }
  if (v0.has_rand_skip()) {
    require(data || images, "rand_skip");
    if (data) out->mutable_data_param()->set_rand_skip(v0.rand_skip());
    if (images) out->mutable_image_data_param()->set_rand_skip(v0.rand_skip());
  }
  if (v0.has_shuffle_images()) {
    require(images, "shuffle_images");
    out->mutable_image_data_param()->set_shuffle(v0.shuffle_images());
  }
  if (v0.has_new_height()) {
    require(images, "new_height");
    out->mutable_image_data_param()->set_new_height(v0.new_height());
  }
  if (v0.has_new_width()) {
    require(images, "new_width");
    out->mutable_image_data_param()->set_new_width(v0.new_width());
  }
  if (v0.has_concat_dim()) {
    require(t == "concat", "concat_dim");
    out->mutable_concat_param()->set_concat_dim(v0.concat_dim());
  }
  if (v0.has_det_fg_threshold()) {
    require(window, "det_fg_threshold");
    out->mutable_window_data_param()->set_fg_threshold(v0.det_fg_threshold());
  }
  if (v0.has_det_bg_threshold()) {
    require(window, "det_bg_threshold");
    out->mutable_window_data_param()->set_bg_threshold(v0.det_bg_threshold());
  }
  if (v0.has_det_fg_fraction()) {
    require(window, "det_fg_fraction");
    out->mutable_window_data_param()->set_fg_fraction(v0.det_fg_fraction());
  }
  if (v0.has_det_context_pad()) {
    require(window, "det_context_pad");
    out->mutable_window_data_param()->set_context_pad(v0.det_context_pad());
  }
  if (v0.has_det_crop_mode()) {
    require(window, "det_crop_mode");
    out->mutable_window_data_param()->set_crop_mode(v0.det_crop_mode());
  }
  if (v0.has_hdf5_output_param()) {
    require(t == "hdf5_output", "hdf5_output_param");
    *out->mutable_hdf5_output_param() = v0.hdf5_output_param();
  }
  // The V0 reshape sizes have no V1 or current equivalent.
  require(!v0.has_new_num() && !v0.has_new_channels(), "new_num/new_channels");
}

}  // namespace

void upgrade_v0_net(NetParameter* net, const std::string& source) {
  fold_v0_padding(net, source);
  for (int i = 0; i < net->layers_size(); ++i) {
    V1LayerParameter upgraded;
    upgrade_v0_layer(net->layers(i), i, source, &upgraded);
    *net->mutable_layers(i) = std::move(upgraded);
  }
}

}  // namespace crema
