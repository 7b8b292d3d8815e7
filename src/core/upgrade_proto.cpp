// Upgrade of V1 nets and legacy solvers to the current schema (V0 nets: upgrade_v0.cpp); see
// upgrade_proto.h.
#include "core/upgrade_proto.h"

#include <glog/logging.h>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/errors.h"
#include "core/hdf5_weights.h"
#include "core/proto_io.h"
#include "core/upgrade_v0.h"

namespace crema {

std::string upgrade_layer_label(const std::string& name, int index) {
  if (name.empty()) return detail::make_message("layer #", index + 1, " (unnamed)");
  return detail::make_message("layer '", name, "'");
}

namespace {

namespace pb = google::protobuf;

using V1Type = V1LayerParameter::LayerType;

// ---- V1 -> current -------------------------------------------------------------------------

// The type strings of the current format, as Caffe names them; empty for NONE and unknown values.
std::string v1_type_name(V1Type type) {
  switch (type) {
    case V1LayerParameter::NONE:
      return "";
    case V1LayerParameter::ABSVAL:
      return "AbsVal";
    case V1LayerParameter::ACCURACY:
      return "Accuracy";
    case V1LayerParameter::ARGMAX:
      return "ArgMax";
    case V1LayerParameter::BNLL:
      return "BNLL";
    case V1LayerParameter::CONCAT:
      return "Concat";
    case V1LayerParameter::CONTRASTIVE_LOSS:
      return "ContrastiveLoss";
    case V1LayerParameter::CONVOLUTION:
      return "Convolution";
    case V1LayerParameter::DATA:
      return "Data";
    case V1LayerParameter::DECONVOLUTION:
      return "Deconvolution";
    case V1LayerParameter::DROPOUT:
      return "Dropout";
    case V1LayerParameter::DUMMY_DATA:
      return "DummyData";
    case V1LayerParameter::EUCLIDEAN_LOSS:
      return "EuclideanLoss";
    case V1LayerParameter::ELTWISE:
      return "Eltwise";
    case V1LayerParameter::EXP:
      return "Exp";
    case V1LayerParameter::FLATTEN:
      return "Flatten";
    case V1LayerParameter::HDF5_DATA:
      return "HDF5Data";
    case V1LayerParameter::HDF5_OUTPUT:
      return "HDF5Output";
    case V1LayerParameter::HINGE_LOSS:
      return "HingeLoss";
    case V1LayerParameter::IM2COL:
      return "Im2col";
    case V1LayerParameter::IMAGE_DATA:
      return "ImageData";
    case V1LayerParameter::INFOGAIN_LOSS:
      return "InfogainLoss";
    case V1LayerParameter::INNER_PRODUCT:
      return "InnerProduct";
    case V1LayerParameter::LRN:
      return "LRN";
    case V1LayerParameter::MEMORY_DATA:
      return "MemoryData";
    case V1LayerParameter::MULTINOMIAL_LOGISTIC_LOSS:
      return "MultinomialLogisticLoss";
    case V1LayerParameter::MVN:
      return "MVN";
    case V1LayerParameter::POOLING:
      return "Pooling";
    case V1LayerParameter::POWER:
      return "Power";
    case V1LayerParameter::RELU:
      return "ReLU";
    case V1LayerParameter::SIGMOID:
      return "Sigmoid";
    case V1LayerParameter::SIGMOID_CROSS_ENTROPY_LOSS:
      return "SigmoidCrossEntropyLoss";
    case V1LayerParameter::SILENCE:
      return "Silence";
    case V1LayerParameter::SOFTMAX:
      return "Softmax";
    case V1LayerParameter::SOFTMAX_LOSS:
      return "SoftmaxWithLoss";
    case V1LayerParameter::SPLIT:
      return "Split";
    case V1LayerParameter::SLICE:
      return "Slice";
    case V1LayerParameter::TANH:
      return "TanH";
    case V1LayerParameter::WINDOW_DATA:
      return "WindowData";
    case V1LayerParameter::THRESHOLD:
      return "Threshold";
  }
  return "";
}

// Copies every set message field of the V1 layer (the *_param settings, transform_param,
// loss_param) to the current layer's field of the same name. Reflection rather than a list, so
// a settings message can never be forgotten: the two schemas use identical names for them.
void copy_v1_settings(const V1LayerParameter& v1, LayerParameter* out) {
  const pb::Descriptor* from = V1LayerParameter::descriptor();
  const pb::Descriptor* to = LayerParameter::descriptor();
  const pb::Reflection* from_r = v1.GetReflection();
  const pb::Reflection* to_r = out->GetReflection();
  for (int i = 0; i < from->field_count(); ++i) {
    const pb::FieldDescriptor* f = from->field(i);
    if (f->is_repeated() || f->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (f->name() == "layer" || !from_r->HasField(v1, f)) continue;  // V0 handled earlier
    const pb::FieldDescriptor* g = to->FindFieldByName(f->name());
    CHECK(g != nullptr && g->message_type() == f->message_type())
        << "schema: LayerParameter lacks " << f->name();
    to_r->MutableMessage(out, g)->CopyFrom(from_r->GetMessage(v1, f));
  }
}

void upgrade_v1_layer(const V1LayerParameter& v1, int index, const std::string& source,
                      LayerParameter* out) {
  const std::string where =
      detail::make_message(source, ": V1 ", upgrade_layer_label(v1.name(), index));
  CREMA_REQUIRE(!v1.has_layer(), where, ": holds a V0 layer inside a V1 net");
  const std::string type = v1.has_type() ? v1_type_name(v1.type()) : "";
  CREMA_REQUIRE(!type.empty(), where, ": ",
                v1.has_type()
                    ? "unsupported V1 layer type " + V1LayerParameter::LayerType_Name(v1.type())
                    : std::string("has no (known) layer type"));
  out->Clear();
  out->set_name(v1.name());
  out->set_type(type);
  out->mutable_bottom()->CopyFrom(v1.bottom());
  out->mutable_top()->CopyFrom(v1.top());
  out->mutable_include()->CopyFrom(v1.include());
  out->mutable_exclude()->CopyFrom(v1.exclude());
  out->mutable_loss_weight()->CopyFrom(v1.loss_weight());
  out->mutable_blobs()->CopyFrom(v1.blobs());

  // Per-parameter settings were parallel lists in V1; now one ParamSpec per parameter.
  const int params = std::max(
      {v1.param_size(), v1.blob_share_mode_size(), v1.blobs_lr_size(), v1.weight_decay_size()});
  for (int p = 0; p < params; ++p) {
    ParamSpec* spec = out->add_param();
    if (p < v1.param_size()) spec->set_name(v1.param(p));
    if (p < v1.blob_share_mode_size()) {
      // The two DimCheckMode enums have the same values.
      spec->set_share_mode(static_cast<ParamSpec::DimCheckMode>(v1.blob_share_mode(p)));
    }
    if (p < v1.blobs_lr_size()) spec->set_lr_mult(v1.blobs_lr(p));
    if (p < v1.weight_decay_size()) spec->set_decay_mult(v1.weight_decay(p));
  }
  copy_v1_settings(v1, out);
}

void upgrade_v1_net(NetParameter* net, const std::string& source) {
  CREMA_REQUIRE(net->layer_size() == 0, source,
                ": mixes V1 'layers' and current 'layer' entries; use only one form");
  for (int i = 0; i < net->layers_size(); ++i) {
    upgrade_v1_layer(net->layers(i), i, source, net->add_layer());
  }
  net->clear_layers();
}

// ---- legacy data-layer preprocessing -> transform_param -------------------------------------

template <typename P>
bool has_legacy_transform(const P& p) {
  return p.has_scale() || p.has_mean_file() || p.has_crop_size() || p.has_mirror();
}

// The data layers' own scale / mean_file / crop_size / mirror predate transform_param. They move
// there unless transform_param already says something different, which is ambiguous.
template <typename P>
void move_legacy_transform(P* p, TransformationParameter* t, const std::string& where) {
  auto conflict = [&](const char* field) {
    fail(where, ": ", field,
         " is set both in transform_param and (deprecated) in the data "
         "layer's own parameters, with different values");
  };
  if (p->has_scale()) {
    if (t->has_scale() && t->scale() != p->scale()) conflict("scale");
    t->set_scale(p->scale());
    p->clear_scale();
  }
  if (p->has_mean_file()) {
    if (t->has_mean_file() && t->mean_file() != p->mean_file()) conflict("mean_file");
    t->set_mean_file(p->mean_file());
    p->clear_mean_file();
  }
  if (p->has_crop_size()) {
    if (t->has_crop_size() && t->crop_size() != p->crop_size()) conflict("crop_size");
    t->set_crop_size(p->crop_size());
    p->clear_crop_size();
  }
  if (p->has_mirror()) {
    if (t->has_mirror() && t->mirror() != p->mirror()) conflict("mirror");
    t->set_mirror(p->mirror());
    p->clear_mirror();
  }
}

bool layer_needs_data_upgrade(const LayerParameter& l) {
  return (l.type() == "Data" && has_legacy_transform(l.data_param())) ||
         (l.type() == "ImageData" && has_legacy_transform(l.image_data_param())) ||
         (l.type() == "WindowData" && has_legacy_transform(l.window_data_param()));
}

bool v1_layer_needs_data_upgrade(const V1LayerParameter& l) {
  return (l.type() == V1LayerParameter::DATA && has_legacy_transform(l.data_param())) ||
         (l.type() == V1LayerParameter::IMAGE_DATA && has_legacy_transform(l.image_data_param())) ||
         (l.type() == V1LayerParameter::WINDOW_DATA && has_legacy_transform(l.window_data_param()));
}

void upgrade_data_transform(NetParameter* net, const std::string& source) {
  for (int i = 0; i < net->layer_size(); ++i) {
    LayerParameter* l = net->mutable_layer(i);
    if (!layer_needs_data_upgrade(*l)) continue;
    const std::string where = detail::make_message(source, ": ", upgrade_layer_label(l->name(), i));
    TransformationParameter* t = l->mutable_transform_param();
    if (l->type() == "Data") move_legacy_transform(l->mutable_data_param(), t, where);
    if (l->type() == "ImageData") move_legacy_transform(l->mutable_image_data_param(), t, where);
    if (l->type() == "WindowData") {
      move_legacy_transform(l->mutable_window_data_param(), t, where);
    }
  }
}

// ---- net-level inputs -> Input layer --------------------------------------------------------

bool net_has_legacy_inputs(const NetParameter& net) {
  return net.input_size() > 0 || net.input_shape_size() > 0 || net.input_dim_size() > 0;
}

void upgrade_inputs(NetParameter* net, const std::string& source) {
  const int n = net->input_size();
  const bool has_shape = net->input_shape_size() > 0;
  const bool has_dim = net->input_dim_size() > 0;
  CREMA_REQUIRE(n > 0 || (!has_shape && !has_dim), source,
                ": input_shape/input_dim given without any 'input' blob name");
  CREMA_REQUIRE(!(has_shape && has_dim), source,
                ": both input_shape and input_dim are given; use only input_shape");
  CREMA_REQUIRE(!has_shape || net->input_shape_size() == n, source, ": ", n, " input(s) but ",
                net->input_shape_size(), " input_shape entries; give one each");
  CREMA_REQUIRE(!has_dim || net->input_dim_size() == 4 * n, source, ": ", n, " input(s) need ",
                4 * n, " input_dim values (N, C, H, W each), got ", net->input_dim_size());
  // Inputs without any shape come from old weight files; their names alone carry nothing.
  if (has_shape || has_dim) {
    LayerParameter* input = net->add_layer();
    input->set_name("input");
    input->set_type("Input");
    for (int i = 0; i < n; ++i) {
      input->add_top(net->input(i));
      BlobShape* shape = input->mutable_input_param()->add_shape();
      if (has_shape) {
        *shape = net->input_shape(i);
      } else {
        for (int d = 0; d < 4; ++d) shape->add_dim(net->input_dim(4 * i + d));
      }
    }
    // Move it to the front: every other layer may consume the inputs.
    for (int i = net->layer_size() - 1; i > 0; --i) net->mutable_layer()->SwapElements(i, i - 1);
  }
  net->clear_input();
  net->clear_input_shape();
  net->clear_input_dim();
}

// ---- BatchNorm ------------------------------------------------------------------------------

// Old BatchNorm definitions listed three ParamSpecs (lr_mult 0) to freeze the running statistics;
// the layer now never learns them, and the specs would only confuse parameter sharing.
bool layer_needs_batch_norm_upgrade(const LayerParameter& l) {
  return l.type() == "BatchNorm" && l.param_size() == 3;
}

}  // namespace

bool net_needs_upgrade(const NetParameter& net) {
  if (net.layers_size() > 0 || net_has_legacy_inputs(net)) return true;
  for (const auto& l : net.layer()) {
    if (layer_needs_data_upgrade(l) || layer_needs_batch_norm_upgrade(l)) return true;
  }
  for (const auto& l : net.layers()) {
    if (v1_layer_needs_data_upgrade(l)) return true;
  }
  return false;
}

void upgrade_net(NetParameter* net, const std::string& source) {
  if (net_has_v0_layers(*net)) {
    LOG(INFO) << "Upgrading V0 net definition " << source;
    upgrade_v0_net(net, source);
  }
  if (net->layers_size() > 0) {
    LOG(INFO) << "Upgrading V1 net definition " << source;
    upgrade_v1_net(net, source);
  }
  // After the V1 step, so legacy preprocessing of V1 and current layers moves the same way.
  upgrade_data_transform(net, source);
  if (net_has_legacy_inputs(*net)) upgrade_inputs(net, source);
  for (auto& l : *net->mutable_layer()) {
    if (layer_needs_batch_norm_upgrade(l)) l.clear_param();
  }
}

bool solver_needs_upgrade(const SolverParameter& solver) {
  if (solver.has_solver_type()) return true;
  if (solver.has_net_param() && net_needs_upgrade(solver.net_param())) return true;
  if (solver.has_train_net_param() && net_needs_upgrade(solver.train_net_param())) return true;
  for (const auto& n : solver.test_net_param()) {
    if (net_needs_upgrade(n)) return true;
  }
  return false;
}

void upgrade_solver(SolverParameter* solver, const std::string& source) {
  if (solver->has_solver_type()) {
    std::string type;
    switch (solver->solver_type()) {
      case SolverParameter::SGD:
        type = "SGD";
        break;
      case SolverParameter::NESTEROV:
        type = "Nesterov";
        break;
      case SolverParameter::ADAGRAD:
        type = "AdaGrad";
        break;
      case SolverParameter::RMSPROP:
        type = "RMSProp";
        break;
      case SolverParameter::ADADELTA:
        type = "AdaDelta";
        break;
      case SolverParameter::ADAM:
        type = "Adam";
        break;
    }
    CREMA_REQUIRE(!type.empty(), source, ": unknown solver_type ",
                  static_cast<int>(solver->solver_type()));
    CREMA_REQUIRE(!solver->has_type() || solver->type() == type, source,
                  ": solver_type: ", SolverParameter::SolverType_Name(solver->solver_type()),
                  " and type: \"", solver->type(),
                  "\" disagree; remove the deprecated solver_type");
    solver->set_type(type);
    solver->clear_solver_type();
  }
  if (solver->has_net_param()) upgrade_net(solver->mutable_net_param(), source + " (net_param)");
  if (solver->has_train_net_param()) {
    upgrade_net(solver->mutable_train_net_param(), source + " (train_net_param)");
  }
  for (int i = 0; i < solver->test_net_param_size(); ++i) {
    upgrade_net(solver->mutable_test_net_param(i),
                detail::make_message(source, " (test_net_param #", i + 1, ")"));
  }
}

namespace {

// Where each layer of a net read from text starts, by name: 1-based lines in the order written
// (the layers of a current net, or the legacy `layers` of a V0/V1 one).
std::map<std::string, std::deque<int>> layer_lines(const NetParameter& net,
                                                   const pb::TextFormat::ParseInfoTree& where) {
  std::map<std::string, std::deque<int>> lines;
  const pb::Descriptor* d = NetParameter::descriptor();
  for (int i = 0; i < net.layer_size(); ++i)
    lines[net.layer(i).name()].push_back(where.GetLocation(d->FindFieldByName("layer"), i).line +
                                         1);
  for (int i = 0; i < net.layers_size(); ++i) {
    const V1LayerParameter& l = net.layers(i);
    lines[l.has_layer() ? l.layer().name() : l.name()].push_back(
        where.GetLocation(d->FindFieldByName("layers"), i).line + 1);
  }
  return lines;
}

// Gives each layer of the upgraded net the place of the layer of its name written in that turn
// (a TRAIN and a TEST layer may share a name); layers the upgrade made (a V0 net's Input) get
// none.
void set_source_locations(NetParameter* net, std::map<std::string, std::deque<int>> lines,
                          const std::string& path) {
  for (LayerParameter& l : *net->mutable_layer()) {
    auto it = lines.find(l.name());
    if (it == lines.end() || it->second.empty() || it->second.front() <= 0) continue;
    l.set_source_location(path + ":" + std::to_string(it->second.front()));
    it->second.pop_front();
  }
}

}  // namespace

NetParameter load_net_param_text(const std::string& path) {
  NetParameter net;
  pb::TextFormat::ParseInfoTree where;
  read_text_proto(path, &net, &where);
  auto lines = layer_lines(net, where);
  upgrade_net(&net, path);
  set_source_locations(&net, std::move(lines), path);
  return net;
}

NetParameter load_net_param_binary(const std::string& path) {
  if (looks_like_hdf5(path)) return read_net_hdf5(path);
  NetParameter net;
  read_binary_proto(path, &net);
  upgrade_net(&net, path);
  return net;
}

SolverParameter load_solver_param(const std::string& path) {
  SolverParameter solver;
  pb::TextFormat::ParseInfoTree where;
  read_text_proto(path, &solver, &where);
  // The nets written inside the solver file point into it too.
  const pb::Descriptor* d = SolverParameter::descriptor();
  const auto lines_of = [&](const char* field, int index, const NetParameter& net) {
    const pb::TextFormat::ParseInfoTree* tree =
        where.GetTreeForNested(d->FindFieldByName(field), index);
    return tree ? layer_lines(net, *tree) : std::map<std::string, std::deque<int>>{};
  };
  // (Index -1 names a singular field.)
  auto net_lines = lines_of("net_param", -1, solver.net_param());
  auto train_lines = lines_of("train_net_param", -1, solver.train_net_param());
  std::vector<std::map<std::string, std::deque<int>>> test_lines;
  for (int i = 0; i < solver.test_net_param_size(); ++i)
    test_lines.push_back(lines_of("test_net_param", i, solver.test_net_param(i)));
  upgrade_solver(&solver, path);
  // (mutable_* would create the nets a solver does not have.)
  if (solver.has_net_param())
    set_source_locations(solver.mutable_net_param(), std::move(net_lines), path);
  if (solver.has_train_net_param())
    set_source_locations(solver.mutable_train_net_param(), std::move(train_lines), path);
  for (int i = 0; i < solver.test_net_param_size(); ++i)
    set_source_locations(solver.mutable_test_net_param(i), std::move(test_lines[size_t(i)]), path);
  return solver;
}

}  // namespace crema
