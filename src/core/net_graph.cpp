// Net graph passes: rule filtering and split insertion.
#include "core/net_graph.h"

#include <algorithm>
#include <map>
#include <utility>

#include "core/errors.h"
#include "core/layer_place.h"

namespace crema {

bool state_meets_rule(const NetState& state, const NetStateRule& rule) {
  if (rule.has_phase() && rule.phase() != state.phase()) return false;
  if (rule.has_min_level() && state.level() < rule.min_level()) return false;
  if (rule.has_max_level() && state.level() > rule.max_level()) return false;
  const auto has_stage = [&](const std::string& s) {
    return std::find(state.stage().begin(), state.stage().end(), s) != state.stage().end();
  };
  for (const auto& s : rule.stage())
    if (!has_stage(s)) return false;
  for (const auto& s : rule.not_stage())
    if (has_stage(s)) return false;
  return true;
}

NetParameter filter_net(const NetParameter& param) {
  NetParameter out(param);
  out.clear_layer();
  for (const LayerParameter& layer : param.layer()) {
    CREMA_REQUIRE(layer.include_size() == 0 || layer.exclude_size() == 0, layer_place(layer),
                  "layer ", layer.name(), ": give either include or exclude rules, not both");
    bool keep = layer.include_size() == 0;
    for (const auto& rule : layer.exclude())
      if (state_meets_rule(param.state(), rule)) keep = false;
    for (const auto& rule : layer.include())
      if (state_meets_rule(param.state(), rule)) keep = true;
    if (keep) *out.add_layer() = layer;
  }
  return out;
}

std::string split_layer_name(const std::string& blob, const std::string& layer, int top_index) {
  return blob + "_" + layer + "_" + std::to_string(top_index) + "_split";
}

std::string split_blob_name(const std::string& blob, const std::string& layer, int top_index,
                            int split_index) {
  return split_layer_name(blob, layer, top_index) + "_" + std::to_string(split_index);
}

NetParameter insert_splits(const NetParameter& param) {
  using Slot = std::pair<int, int>;  // (layer index, top or bottom index)
  std::map<std::string, Slot> last_producer;
  std::map<Slot, Slot> source_of_bottom;
  std::map<Slot, int> consumers;
  std::map<Slot, float> loss_weight;
  for (int i = 0; i < param.layer_size(); ++i) {
    const LayerParameter& layer = param.layer(i);
    for (int j = 0; j < layer.bottom_size(); ++j) {
      const auto it = last_producer.find(layer.bottom(j));
      CREMA_REQUIRE(it != last_producer.end(), layer_place(layer), "layer ", layer.name(),
                    ": bottom \"", layer.bottom(j), "\" is not produced by any earlier layer");
      source_of_bottom[{i, j}] = it->second;
      ++consumers[it->second];
    }
    for (int j = 0; j < layer.top_size(); ++j) {
      last_producer[layer.top(j)] = {i, j};
      if (j < layer.loss_weight_size() && layer.loss_weight(j) != 0)
        loss_weight[{i, j}] = layer.loss_weight(j);
    }
  }
  NetParameter out(param);
  out.clear_layer();
  std::map<Slot, int> next_split;
  for (int i = 0; i < param.layer_size(); ++i) {
    LayerParameter* layer = out.add_layer();
    *layer = param.layer(i);
    for (int j = 0; j < layer->bottom_size(); ++j) {
      const Slot src = source_of_bottom[{i, j}];
      const int uses = consumers[src] + (loss_weight.count(src) ? 1 : 0);
      if (uses > 1) {
        const std::string& producer = param.layer(src.first).name();
        layer->set_bottom(
            j, split_blob_name(layer->bottom(j), producer, src.second, next_split[src]++));
      }
    }
    for (int j = 0; j < layer->top_size(); ++j) {
      const Slot top{i, j};
      const int uses = consumers[top] + (loss_weight.count(top) ? 1 : 0);
      if (uses <= 1) continue;
      const std::string blob = layer->top(j);
      LayerParameter split;
      split.set_name(split_layer_name(blob, layer->name(), j));
      split.set_type("Split");
      split.add_bottom(blob);
      for (int k = 0; k < uses; ++k) {
        split.add_top(split_blob_name(blob, layer->name(), j, k));
        // The loss weight moves to the last split output, which no consumer takes: a consumer's
        // backward overwrites its top's diff, where the loss weight is kept.
        if (loss_weight.count(top)) split.add_loss_weight(k == uses - 1 ? loss_weight[top] : 0.0f);
      }
      if (loss_weight.count(top)) layer->set_loss_weight(j, 0.0f);
      *out.add_layer() = split;
    }
  }
  return out;
}

}  // namespace crema
