// ONNX converters of the layers with learned weights or windows: Convolution, Deconvolution,
// Pooling, LRN, InnerProduct, PReLU, BatchNorm (with its Scale folded in), Scale and Bias.
#include <algorithm>
#include <cmath>

#include "export/onnx_layers.h"
#include "layers/conv_geometry.h"

namespace crema {

std::vector<float> OnnxLayerContext::blob_values(int i) const {
  return layer->blobs()[size_t(i)]->data_vector();
}

std::vector<int64_t> OnnxLayerContext::blob_shape(int i) const {
  return layer->blobs()[size_t(i)]->shape();
}

namespace {

void convert_conv(OnnxLayerContext& c, const char* op) {
  const ConvolutionParameter& p = c.param().convolution_param();
  const ConvGeometry g = read_conv_geometry(*c.layer, p);
  std::vector<std::string> inputs = {
      c.inputs[0], c.graph->add_float(c.name() + "/weight", c.blob_shape(0), c.blob_values(0))};
  if (c.num_blobs() > 1)
    inputs.push_back(c.graph->add_float(c.name() + "/bias", c.blob_shape(1), c.blob_values(1)));
  onnx::NodeProto* node = c.graph->add_node(op, c.name(), inputs, {c.outputs[0]});
  set_attr(node, "kernel_shape", std::vector<int64_t>{g.kernel_h, g.kernel_w});
  set_attr(node, "strides", std::vector<int64_t>{g.stride_h, g.stride_w});
  set_attr(node, "dilations", std::vector<int64_t>{g.dilation_h, g.dilation_w});
  set_attr(node, "pads", std::vector<int64_t>{g.pad_h, g.pad_w, g.pad_h, g.pad_w});
  set_attr(node, "group", int64_t(p.group()));
}

// The pad after the input along one axis that makes ONNX's floor rounding give the Net's
// output size: Caffe rounds up (CEIL), which adds windows past the symmetric padding.
int64_t extra_end_pad(const OnnxLayerContext& c, int64_t in, int64_t out, int64_t kernel,
                      int64_t pad, int64_t stride) {
  // Every window must still start inside the input: Caffe keeps no window that starts in the
  // padding, and ONNX gives such a window no value Caffe would.
  if ((out - 1) * stride - pad >= in)
    c.error("the last pooling window starts past the input (stride ", stride, " > kernel ", kernel,
            "): ONNX has no such window");
  return std::max<int64_t>(0, (out - 1) * stride + kernel - (in + 2 * pad));
}

}  // namespace

void convert_convolution(OnnxLayerContext& c) { convert_conv(c, "Conv"); }
void convert_deconvolution(OnnxLayerContext& c) { convert_conv(c, "ConvTranspose"); }

void convert_pooling(OnnxLayerContext& c) {
  const PoolingParameter& p = c.param().pooling_param();
  const bool max = p.pool() == PoolingParameter::MAX;
  if (!max && p.pool() != PoolingParameter::AVE)
    c.error("pool method ", PoolingParameter::PoolMethod_Name(p.pool()),
            " has no ONNX operator (MAX and AVE do)");
  if (p.global_pooling()) {
    c.graph->add_node(max ? "GlobalMaxPool" : "GlobalAveragePool", c.name(), {c.inputs[0]},
                      {c.outputs[0]});
    return;
  }
  const std::vector<int64_t>& x = c.bottoms[0]->shape();
  const std::vector<int64_t>& y = c.tops[0]->shape();
  const int64_t kh = p.has_kernel_h() ? p.kernel_h() : p.kernel_size();
  const int64_t kw = p.has_kernel_w() ? p.kernel_w() : p.kernel_size();
  const int64_t ph = p.has_pad_h() ? p.pad_h() : p.pad();
  const int64_t pw = p.has_pad_w() ? p.pad_w() : p.pad();
  const int64_t sh = p.has_stride_h() ? p.stride_h() : p.stride();
  const int64_t sw = p.has_stride_w() ? p.stride_w() : p.stride();
  const int64_t eh = extra_end_pad(c, x[2], y[2], kh, ph, sh);
  const int64_t ew = extra_end_pad(c, x[3], y[3], kw, pw, sw);
  std::string input = c.inputs[0];
  std::vector<int64_t> pads = {ph, pw, ph + eh, pw + ew};
  int64_t count_include_pad = 0;
  if (!max && (ph > 0 || pw > 0)) {
    // Caffe's average divides by the window clipped to the padded input (the pad counts, the
    // rounding's extra windows past it do not). Without extra windows that is ONNX's
    // count_include_pad; with them, the pad is made real zeros first and only the extra end
    // pad is left to the pooling, which then does not count it.
    if (eh == 0 && ew == 0) {
      count_include_pad = 1;
    } else {
      const std::string pad_widths =
          c.graph->add_int64(c.name() + "/pads", {8}, {0, 0, ph, pw, 0, 0, ph, pw});
      input = c.graph->add_op("Pad", c.name() + "/pad", {input, pad_widths}, c.name() + "/padded");
      pads = {0, 0, eh, ew};
    }
  }
  onnx::NodeProto* node =
      c.graph->add_node(max ? "MaxPool" : "AveragePool", c.name(), {input}, {c.outputs[0]});
  set_attr(node, "kernel_shape", std::vector<int64_t>{kh, kw});
  set_attr(node, "strides", std::vector<int64_t>{sh, sw});
  set_attr(node, "pads", pads);
  if (!max) set_attr(node, "count_include_pad", count_include_pad);
}

void convert_lrn(OnnxLayerContext& c) {
  const LRNParameter& p = c.param().lrn_param();
  const int64_t size = p.local_size();
  if (p.norm_region() == LRNParameter::ACROSS_CHANNELS) {
    onnx::NodeProto* node = c.graph->add_node("LRN", c.name(), {c.inputs[0]}, {c.outputs[0]});
    set_attr(node, "size", size);
    set_attr(node, "alpha", p.alpha());
    set_attr(node, "beta", p.beta());
    set_attr(node, "bias", p.k());
    return;
  }
  // WITHIN_CHANNEL, as Caffe composes it: y = x * (1 + alpha * mean(x^2 over a size x size
  // window, zero padded, always divided by size^2))^-beta. Caffe never reads k here.
  OnnxGraph& g = *c.graph;
  const std::string& x = c.inputs[0];
  const std::string& n = c.name();
  const std::string sq = g.add_op("Mul", n + "/square", {x, x}, n + "/square");
  onnx::NodeProto* pool = nullptr;
  const std::string mean = g.add_op("AveragePool", n + "/mean", {sq}, n + "/mean", &pool);
  const int64_t pad = (size - 1) / 2;
  set_attr(pool, "kernel_shape", std::vector<int64_t>{size, size});
  set_attr(pool, "pads", std::vector<int64_t>{pad, pad, pad, pad});
  set_attr(pool, "count_include_pad", int64_t(1));
  const std::string scaled =
      g.add_op("Mul", n + "/alpha", {mean, g.add_scalar(n + "/alpha", p.alpha())}, n + "/scaled");
  const std::string base =
      g.add_op("Add", n + "/one", {scaled, g.add_scalar(n + "/one", 1.0f)}, n + "/base");
  const std::string factor =
      g.add_op("Pow", n + "/pow", {base, g.add_scalar(n + "/exponent", -p.beta())}, n + "/factor");
  g.add_node("Mul", n, {x, factor}, {c.outputs[0]});
}

void convert_inner_product(OnnxLayerContext& c) {
  const InnerProductParameter& p = c.param().inner_product_param();
  const std::vector<int64_t>& x = c.bottoms[0]->shape();
  const int axis = int(p.axis() < 0 ? p.axis() + int64_t(x.size()) : p.axis());
  const int64_t n = p.num_output();
  const int64_t k = int64_t(c.layer->blobs()[0]->count()) / n;
  OnnxGraph& g = *c.graph;
  std::string input = c.inputs[0];
  // Gemm takes a matrix: the axes before `axis` become its rows, the rest its columns.
  if (x.size() != 2 || axis != 1) {
    onnx::NodeProto* flatten = nullptr;
    input = g.add_op("Flatten", c.name() + "/flatten", {input}, c.name() + "/flat", &flatten);
    set_attr(flatten, "axis", int64_t(axis));
  }
  // Caffe's weight is num_output x K, or K x num_output with transpose.
  const std::vector<int64_t> wdims =
      p.transpose() ? std::vector<int64_t>{k, n} : std::vector<int64_t>{n, k};
  std::vector<std::string> inputs = {input,
                                     g.add_float(c.name() + "/weight", wdims, c.blob_values(0))};
  if (c.num_blobs() > 1) inputs.push_back(g.add_float(c.name() + "/bias", {n}, c.blob_values(1)));
  // Rows past the batch axis (axis > 1) are folded back into the Net's output shape.
  const bool unfold = axis != 1;
  std::string gemm_out = unfold ? g.unique_name(c.name() + "/gemm") : c.outputs[0];
  onnx::NodeProto* gemm = g.add_node("Gemm", c.name(), inputs, {gemm_out});
  set_attr(gemm, "transB", int64_t(p.transpose() ? 0 : 1));
  if (unfold) {
    std::vector<int64_t> rows(x.begin(), x.begin() + axis);
    int64_t m = 1;
    for (int64_t d : rows) m *= d;
    emit_reshape(c, gemm_out, {m, n}, c.tops[0]->shape(), c.outputs[0]);
  }
}

void convert_prelu(OnnxLayerContext& c) {
  // The slope broadcasts over the axes after the channels: C x 1 x 1 for an N x C x H x W input.
  std::vector<int64_t> dims = c.blob_shape(0);
  if (dims.empty()) {
    dims = {1};
  } else {
    for (size_t i = 2; i < c.bottoms[0]->shape().size(); ++i) dims.push_back(1);
  }
  const std::string slope = c.graph->add_float(c.name() + "/slope", dims, c.blob_values(0));
  c.graph->add_node("PRelu", c.name(), {c.inputs[0], slope}, {c.outputs[0]});
}

namespace {

// The dims a parameter of shape `param` covering axes [axis, axis + rank) of an input of
// `rank_x` axes takes for ONNX's broadcasting, which aligns trailing axes: trailing 1s.
std::vector<int64_t> broadcast_dims(std::vector<int64_t> param, int axis, size_t rank_x) {
  const size_t end = param.empty() ? 0 : size_t(axis) + param.size();
  for (size_t i = end; i < rank_x; ++i) param.push_back(1);
  if (param.empty()) param = {1};
  return param;
}

// Scale's and Bias's axis on the input, and the parameter's dims for broadcasting.
int param_axis(const OnnxLayerContext& c, int64_t axis) {
  const int64_t rank = int64_t(c.bottoms[0]->shape().size());
  return int(axis < 0 ? axis + rank : axis);
}

// The parameter operand of Scale or Bias: learned blob `blob`, or the second bottom reshaped.
std::string param_operand(OnnxLayerContext& c, int64_t axis_field, int blob,
                          const std::string& what) {
  const int axis = param_axis(c, axis_field);
  const size_t rank = c.bottoms[0]->shape().size();
  if (c.bottoms.size() > 1) {
    const std::vector<int64_t>& s = c.bottoms[1]->shape();
    const std::vector<int64_t> dims = broadcast_dims(s, axis, rank);
    if (dims == s) return c.inputs[1];
    return emit_reshape(c, c.inputs[1], s, dims, "");
  }
  return c.graph->add_float(c.name() + "/" + what, broadcast_dims(c.blob_shape(blob), axis, rank),
                            c.blob_values(blob));
}

}  // namespace

void convert_scale(OnnxLayerContext& c) {
  const ScaleParameter& p = c.param().scale_param();
  const std::string s = param_operand(c, p.axis(), 0, "scale");
  if (!p.bias_term()) {
    c.graph->add_node("Mul", c.name(), {c.inputs[0], s}, {c.outputs[0]});
    return;
  }
  const std::string scaled =
      c.graph->add_op("Mul", c.name() + "/scale", {c.inputs[0], s}, c.name() + "/scaled");
  // The bias is the last blob and has the scale's shape.
  const int bias = c.num_blobs() - 1;
  const int axis = param_axis(c, p.axis());
  const std::string b = c.graph->add_float(
      c.name() + "/bias",
      broadcast_dims(c.bottoms.size() > 1 ? c.bottoms[1]->shape() : c.blob_shape(0), axis,
                     c.bottoms[0]->shape().size()),
      c.blob_values(bias));
  c.graph->add_node("Add", c.name(), {scaled, b}, {c.outputs[0]});
}

void convert_bias(OnnxLayerContext& c) {
  const std::string b = param_operand(c, c.param().bias_param().axis(), 0, "bias");
  c.graph->add_node("Add", c.name(), {c.inputs[0], b}, {c.outputs[0]});
}

void convert_mvn(OnnxLayerContext& c) {
  // y = (x - mean) / (sigma + eps), the statistics over the values of each channel of each image
  // (axes 2 on), or of each image (axes 1 on) with across_channels.
  const MVNParameter& p = c.param().mvn_param();
  const int64_t rank = int64_t(c.bottoms[0]->shape().size());
  std::vector<int64_t> axes;
  for (int64_t a = p.across_channels() ? 1 : 2; a < rank; ++a) axes.push_back(a);
  if (axes.empty()) c.error("needs an input with values to normalize after the channel axis");
  OnnxGraph& g = *c.graph;
  const std::string& n = c.name();
  const auto mean_of = [&](const std::string& v, const std::string& what) {
    onnx::NodeProto* node = nullptr;
    const std::string m = g.add_op("ReduceMean", n + "/" + what, {v}, n + "/" + what, &node);
    set_attr(node, "axes", axes);
    set_attr(node, "keepdims", int64_t(1));
    return m;
  };
  const std::string mean = mean_of(c.inputs[0], "mean");
  if (!p.normalize_variance()) {
    g.add_node("Sub", n, {c.inputs[0], mean}, {c.outputs[0]});
    return;
  }
  const std::string centred = g.add_op("Sub", n + "/centre", {c.inputs[0], mean}, n + "/centred");
  const std::string sq = g.add_op("Mul", n + "/square", {centred, centred}, n + "/square");
  const std::string sigma = g.add_op("Sqrt", n + "/sigma", {mean_of(sq, "variance")}, n + "/sigma");
  const std::string denominator =
      g.add_op("Add", n + "/eps", {sigma, g.add_scalar(n + "/eps", p.eps())}, n + "/denominator");
  g.add_node("Div", n, {centred, denominator}, {c.outputs[0]});
}

bool scale_folds_into_batch_norm(const OnnxLayerContext& bn, const OnnxLayerContext& scale) {
  const ScaleParameter& p = scale.param().scale_param();
  const std::vector<int64_t>& x = bn.tops[0]->shape();
  return scale.bottoms.size() == 1 && scale.inputs[0] == bn.outputs[0] && x.size() >= 2 &&
         param_axis(scale, p.axis()) == 1 && scale.blob_shape(0) == std::vector<int64_t>{x[1]};
}

void convert_batch_norm(OnnxLayerContext& c, const OnnxLayerContext* scale) {
  const BatchNormParameter& p = c.param().batch_norm_param();
  if (p.has_use_global_stats() && !p.use_global_stats())
    c.error(
        "use_global_stats: false normalizes by each batch's statistics; ONNX export needs "
        "the stored ones (remove the field for the TEST phase)");
  const std::vector<int64_t>& x = c.bottoms[0]->shape();
  if (x.size() < 2) c.error("needs an input with a channel axis");
  const int64_t channels = x[1];
  // Caffe stores running sums and their weight (blob 2): the statistics are their quotients.
  const std::vector<float> weight = c.blob_values(2);
  const double factor = weight.empty() || weight[0] == 0 ? 0.0 : 1.0 / double(weight[0]);
  std::vector<float> mean = c.blob_values(0), var = c.blob_values(1);
  for (float& v : mean) v = float(v * factor);
  for (float& v : var) v = float(v * factor);
  std::vector<float> gamma(size_t(channels), 1.0f), beta(size_t(channels), 0.0f);
  std::string out = c.outputs[0];
  std::string label = c.name();
  if (scale) {
    gamma = scale->blob_values(0);
    if (scale->param().scale_param().bias_term()) beta = scale->blob_values(scale->num_blobs() - 1);
    out = scale->outputs[0];
  }
  OnnxGraph& g = *c.graph;
  const std::vector<int64_t> dims = {channels};
  onnx::NodeProto* node =
      g.add_node("BatchNormalization", label,
                 {c.inputs[0], g.add_float(label + "/scale", dims, gamma),
                  g.add_float(label + "/bias", dims, beta),
                  g.add_float(label + "/mean", dims, mean), g.add_float(label + "/var", dims, var)},
                 {out});
  set_attr(node, "epsilon", p.eps());
}

}  // namespace crema
