// ONNX converters of the layers without learned weights: activations, Eltwise, and the layers
// that move data (Concat, Slice, Flatten, Reshape, Crop, Softmax, ArgMax).
#include <cmath>
#include <set>

#include "export/onnx_layers.h"

namespace crema {

std::vector<int64_t> reshape_target(const std::vector<int64_t>& from,
                                    const std::vector<int64_t>& to, bool dynamic_batch) {
  std::vector<int64_t> target = to;
  if (dynamic_batch && !target.empty()) {
    const bool keeps_batch = !from.empty() && from[0] == to[0];
    target[0] = keeps_batch ? 0 : -1;
  }
  return target;
}

std::string emit_reshape(OnnxLayerContext& c, const std::string& input,
                         const std::vector<int64_t>& from, const std::vector<int64_t>& to,
                         const std::string& output_name) {
  const std::vector<int64_t> target = reshape_target(from, to, c.dynamic_batch);
  const std::string shape =
      c.graph->add_int64(c.name() + "/shape", {int64_t(target.size())}, target);
  const std::string out =
      output_name.empty() ? c.graph->unique_name(c.name() + "/reshaped") : output_name;
  c.graph->add_node("Reshape", c.name(), {input, shape}, {out});
  return out;
}

namespace {

const std::set<std::string>& activation_types() {
  static const std::set<std::string> types = {"ReLU",   "ELU",  "Sigmoid", "TanH",
                                              "AbsVal", "BNLL", "Power",   "Exp",
                                              "Log",    "Clip", "Swish",   "Threshold"};
  return types;
}

// A chain of single-output nodes from x, the last one writing c.outputs[0].
struct Chain {
  OnnxLayerContext& c;
  std::string value;
  int steps = 0;

  // Appends op(value, operand...) and returns the node.
  onnx::NodeProto* then(const std::string& op, std::vector<std::string> operands = {},
                        bool last = false) {
    operands.insert(operands.begin(), value);
    const std::string out =
        last ? c.outputs[0] : c.graph->unique_name(c.name() + "/" + std::to_string(++steps));
    onnx::NodeProto* node = c.graph->add_node(op, c.name(), operands, {out});
    value = out;
    return node;
  }
  std::string scalar(const std::string& what, double v) {
    return c.graph->add_scalar(c.name() + "/" + what, float(v));
  }
  // value * scale + shift, skipping a multiply by 1 and an add of 0.
  void affine(double scale, double shift) {
    if (scale != 1) then("Mul", {scalar("scale", scale)});
    if (shift != 0) then("Add", {scalar("shift", shift)});
  }
  void finish() {
    if (value != c.outputs[0]) then("Identity", {}, true);
  }
};

}  // namespace

bool is_onnx_activation(const std::string& type) { return activation_types().count(type) > 0; }

void convert_activation(OnnxLayerContext& c) {
  const std::string type = c.param().type();
  const LayerParameter& p = c.param();
  Chain chain{c, c.inputs[0]};
  if (type == "ReLU") {
    const double slope = p.relu_param().negative_slope();
    if (slope == 0) {
      chain.then("Relu", {}, true);
    } else {
      set_attr(chain.then("LeakyRelu", {}, true), "alpha", float(slope));
    }
  } else if (type == "ELU") {
    set_attr(chain.then("Elu", {}, true), "alpha", p.elu_param().alpha());
  } else if (type == "Sigmoid") {
    chain.then("Sigmoid", {}, true);
  } else if (type == "TanH") {
    chain.then("Tanh", {}, true);
  } else if (type == "AbsVal") {
    chain.then("Abs", {}, true);
  } else if (type == "BNLL") {
    chain.then("Softplus", {}, true);  // log(1 + exp(x))
  } else if (type == "Power") {
    // y = (shift + scale * x)^power
    const PowerParameter& pp = p.power_param();
    chain.affine(pp.scale(), pp.shift());
    if (pp.power() != 1) chain.then("Pow", {chain.scalar("power", pp.power())});
    chain.finish();
  } else if (type == "Exp" || type == "Log") {
    // Exp: y = base^(shift + scale * x) = e^(ln(base) * (shift + scale * x)).
    // Log: y = log_base(shift + scale * x) = ln(shift + scale * x) / ln(base).
    const bool exp = type == "Exp";
    const double base = exp ? p.exp_param().base() : p.log_param().base();
    const double scale = exp ? p.exp_param().scale() : p.log_param().scale();
    const double shift = exp ? p.exp_param().shift() : p.log_param().shift();
    const double ln_base = base == -1 ? 1.0 : std::log(base);
    if (exp) {
      chain.affine(ln_base * scale, ln_base * shift);
      chain.then("Exp", {}, true);
    } else {
      chain.affine(scale, shift);
      chain.then("Log");
      chain.affine(1.0 / ln_base, 0.0);
      chain.finish();
    }
  } else if (type == "Clip") {
    chain.then(
        "Clip",
        {chain.scalar("min", p.clip_param().min()), chain.scalar("max", p.clip_param().max())},
        true);
  } else if (type == "Swish") {
    // y = x * sigmoid(beta * x)
    chain.affine(p.swish_param().beta(), 0.0);
    chain.then("Sigmoid");
    chain.then("Mul", {c.inputs[0]}, true);
  } else if (type == "Threshold") {
    // y = 1 where x > threshold, else 0
    chain.then("Greater", {chain.scalar("threshold", p.threshold_param().threshold())});
    set_attr(chain.then("Cast", {}, true), "to", int64_t(onnx::TensorProto::FLOAT));
  } else {
    c.error("internal: not an activation");
  }
}

void convert_eltwise(OnnxLayerContext& c) {
  const EltwiseParameter& p = c.param().eltwise_param();
  OnnxGraph& g = *c.graph;
  if (p.operation() == EltwiseParameter::PROD) {
    // Mul takes two operands: a chain for more.
    std::string acc = c.inputs[0];
    for (size_t i = 1; i < c.inputs.size(); ++i) {
      const bool last = i + 1 == c.inputs.size();
      const std::string out = last ? c.outputs[0] : g.unique_name(c.name() + "/product");
      g.add_node("Mul", c.name(), {acc, c.inputs[i]}, {out});
      acc = out;
    }
    if (c.inputs.size() == 1) g.add_node("Identity", c.name(), {acc}, {c.outputs[0]});
    return;
  }
  if (p.operation() == EltwiseParameter::MAX) {
    g.add_node("Max", c.name(), c.inputs, {c.outputs[0]});
    return;
  }
  // SUM: y = sum_i coeff_i * x_i
  std::vector<std::string> terms = c.inputs;
  for (int i = 0; i < p.coeff_size(); ++i) {
    if (p.coeff(i) == 1) continue;
    const std::string coeff = g.add_scalar(c.name() + "/coeff" + std::to_string(i), p.coeff(i));
    terms[size_t(i)] =
        g.add_op("Mul", c.name() + "/coeff", {terms[size_t(i)], coeff}, c.name() + "/term");
  }
  g.add_node(terms.size() == 2 ? "Add" : "Sum", c.name(), terms, {c.outputs[0]});
}

namespace {

int canonical_axis(const OnnxLayerContext& c, int64_t axis) {
  const int64_t rank = int64_t(c.bottoms[0]->shape().size());
  return int(axis < 0 ? axis + rank : axis);
}

}  // namespace

void convert_concat(OnnxLayerContext& c) {
  const ConcatParameter& p = c.param().concat_param();
  const int64_t axis = p.has_concat_dim() ? int64_t(p.concat_dim()) : p.axis();
  set_attr(c.graph->add_node("Concat", c.name(), c.inputs, {c.outputs[0]}), "axis",
           int64_t(canonical_axis(c, axis)));
}

void convert_slice(OnnxLayerContext& c) {
  const SliceParameter& p = c.param().slice_param();
  const int axis = canonical_axis(c, p.has_slice_dim() ? int64_t(p.slice_dim()) : p.axis());
  if (axis == 0 && c.dynamic_batch) c.error("slices the batch axis, which is symbolic");
  // The sizes of the pieces are the Net's top shapes along the axis.
  std::vector<int64_t> sizes;
  for (const Tensor<float>* t : c.tops) sizes.push_back(t->shape()[size_t(axis)]);
  const std::string split = c.graph->add_int64(c.name() + "/split", {int64_t(sizes.size())}, sizes);
  set_attr(c.graph->add_node("Split", c.name(), {c.inputs[0], split}, c.outputs), "axis",
           int64_t(axis));
}

void convert_flatten(OnnxLayerContext& c) {
  const FlattenParameter& p = c.param().flatten_param();
  const int64_t rank = int64_t(c.bottoms[0]->shape().size());
  const int64_t end = p.end_axis() < 0 ? p.end_axis() + rank : p.end_axis();
  if (canonical_axis(c, p.axis()) == 1 && end == rank - 1) {
    set_attr(c.graph->add_node("Flatten", c.name(), {c.inputs[0]}, {c.outputs[0]}), "axis",
             int64_t(1));
    return;
  }
  emit_reshape(c, c.inputs[0], c.bottoms[0]->shape(), c.tops[0]->shape(), c.outputs[0]);
}

void convert_reshape(OnnxLayerContext& c) {
  emit_reshape(c, c.inputs[0], c.bottoms[0]->shape(), c.tops[0]->shape(), c.outputs[0]);
}

void convert_softmax(OnnxLayerContext& c) {
  set_attr(c.graph->add_node("Softmax", c.name(), {c.inputs[0]}, {c.outputs[0]}), "axis",
           int64_t(canonical_axis(c, c.param().softmax_param().axis())));
}

void convert_crop(OnnxLayerContext& c) {
  // The first bottom cropped to the second's shape on the axes from `axis` on, at the offsets.
  const CropParameter& p = c.param().crop_param();
  const int axis = canonical_axis(c, p.axis());
  if (axis == 0 && c.dynamic_batch) c.error("crops the batch axis, which is symbolic");
  const std::vector<int64_t>& ref = c.bottoms[1]->shape();
  std::vector<int64_t> starts, ends, axes;
  for (int i = axis; i < int(ref.size()); ++i) {
    const int64_t o = p.offset_size() == 0 ? 0 : p.offset(p.offset_size() == 1 ? 0 : i - axis);
    starts.push_back(o);
    ends.push_back(o + ref[size_t(i)]);
    axes.push_back(i);
  }
  const int64_t n = int64_t(axes.size());
  OnnxGraph& g = *c.graph;
  g.add_node(
      "Slice", c.name(),
      {c.inputs[0], g.add_int64(c.name() + "/starts", {n}, starts),
       g.add_int64(c.name() + "/ends", {n}, ends), g.add_int64(c.name() + "/axes", {n}, axes)},
      {c.outputs[0]});
}

void convert_argmax(OnnxLayerContext& c) {
  const ArgMaxParameter& p = c.param().argmax_param();
  if (p.top_k() != 1 || p.out_max_val() || !p.has_axis())
    c.error("only top_k 1 with an axis and without out_max_val has an ONNX operator (ArgMax)");
  OnnxGraph& g = *c.graph;
  onnx::NodeProto* node = nullptr;
  const std::string index = g.add_op("ArgMax", c.name(), {c.inputs[0]}, c.name() + "/index", &node);
  set_attr(node, "axis", int64_t(canonical_axis(c, p.axis())));
  set_attr(node, "keepdims", int64_t(1));
  // Caffe's indices are floats.
  set_attr(g.add_node("Cast", c.name(), {index}, {c.outputs[0]}), "to",
           int64_t(onnx::TensorProto::FLOAT));
}

}  // namespace crema

namespace crema {

void convert_tile(OnnxLayerContext& c) {
  const TileParameter& p = c.param().tile_param();
  std::vector<int64_t> repeats(c.bottoms[0]->shape().size(), 1);
  repeats[size_t(canonical_axis(c, p.axis()))] = p.tiles();
  const std::string r =
      c.graph->add_int64(c.name() + "/repeats", {int64_t(repeats.size())}, repeats);
  c.graph->add_node("Tile", c.name(), {c.inputs[0], r}, {c.outputs[0]});
}

void convert_reduction(OnnxLayerContext& c) {
  // Every axis from `axis` on reduced to one value, then scaled by coeff.
  const ReductionParameter& p = c.param().reduction_param();
  const int64_t rank = int64_t(c.bottoms[0]->shape().size());
  std::vector<int64_t> axes;
  for (int64_t a = canonical_axis(c, p.axis()); a < rank; ++a) axes.push_back(a);
  OnnxGraph& g = *c.graph;
  const bool scaled = p.coeff() != 1;
  const std::string out = scaled ? g.unique_name(c.name() + "/reduced") : c.outputs[0];
  onnx::NodeProto* node = nullptr;
  switch (p.operation()) {
    case ReductionParameter::SUM:
      // ReduceSum takes its axes as an input since opset 13; the others, as an attribute.
      node = g.add_node(
          "ReduceSum", c.name(),
          {c.inputs[0], g.add_int64(c.name() + "/axes", {int64_t(axes.size())}, axes)}, {out});
      break;
    case ReductionParameter::ASUM:
      node = g.add_node("ReduceL1", c.name(), {c.inputs[0]}, {out});
      break;
    case ReductionParameter::SUMSQ:
      node = g.add_node("ReduceSumSquare", c.name(), {c.inputs[0]}, {out});
      break;
    case ReductionParameter::MEAN:
      node = g.add_node("ReduceMean", c.name(), {c.inputs[0]}, {out});
      break;
    default:
      c.error("reduction operation ", int(p.operation()), " has no ONNX operator");
  }
  if (p.operation() != ReductionParameter::SUM) set_attr(node, "axes", axes);
  set_attr(node, "keepdims", int64_t(0));
  if (scaled)
    g.add_node("Mul", c.name(), {out, g.add_scalar(c.name() + "/coeff", p.coeff())},
               {c.outputs[0]});
}

void convert_parameter(OnnxLayerContext& c) {
  // The learned tensor is a constant of the model.
  const std::string w = c.graph->add_float(c.name() + "/weight", c.blob_shape(0), c.blob_values(0));
  c.graph->add_node("Identity", c.name(), {w}, {c.outputs[0]});
}

}  // namespace crema
