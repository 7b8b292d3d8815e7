// The reference evaluator's windowed and matrix operators: Conv, ConvTranspose, MaxPool,
// AveragePool, GlobalMaxPool, GlobalAveragePool, LRN, Gemm, BatchNormalization, Softmax.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "onnx_reference.h"

namespace crema::test {
namespace {

struct Window {
  int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
};

Window window(const onnx::NodeProto& node, int64_t kh, int64_t kw) {
  const auto k = attr_ints(node, "kernel_shape", {kh, kw});
  const auto s = attr_ints(node, "strides", {1, 1});
  const auto d = attr_ints(node, "dilations", {1, 1});
  const auto p = attr_ints(node, "pads", {0, 0, 0, 0});
  if (k.size() != 2 || s.size() != 2 || d.size() != 2 || p.size() != 4)
    throw std::runtime_error(node.op_type() + ": only 2-d windows");
  if (attr_int(node, "ceil_mode", 0) != 0) throw std::runtime_error("ceil_mode 1 not implemented");
  return {k[0], k[1], s[0], s[1], d[0], d[1], p[0], p[1], p[2], p[3]};
}

int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
  return (in + p0 + p1 - (d * (k - 1) + 1)) / s + 1;
}

RefTensor conv(const onnx::NodeProto& node, const std::vector<RefTensor>& in) {
  const RefTensor &x = in[0], &w = in[1];
  const int64_t n = x.dims[0], c = x.dims[1], h = x.dims[2], wd = x.dims[3];
  const int64_t m = w.dims[0], cg = w.dims[1];
  const Window win = window(node, w.dims[2], w.dims[3]);
  const int64_t g = attr_int(node, "group", 1);
  if (cg * g != c || m % g != 0) throw std::runtime_error("Conv: group mismatch");
  const int64_t oh = out_dim(h, win.kh, win.sh, win.dh, win.pt, win.pb);
  const int64_t ow = out_dim(wd, win.kw, win.sw, win.dw, win.pl, win.pr);
  RefTensor y{{n, m, oh, ow}, std::vector<double>(size_t(n * m * oh * ow))};
  const int64_t mg = m / g;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = in.size() > 2 && !in[2].values.empty() ? in[2].values[size_t(o)] : 0.0;
          const int64_t group = o / mg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ki = 0; ki < win.kh; ++ki)
              for (int64_t kj = 0; kj < win.kw; ++kj) {
                const int64_t yi = i * win.sh - win.pt + ki * win.dh;
                const int64_t xj = j * win.sw - win.pl + kj * win.dw;
                if (yi < 0 || yi >= h || xj < 0 || xj >= wd) continue;
                const int64_t xc = group * cg + ci;
                acc += x.values[size_t(((b * c + xc) * h + yi) * wd + xj)] *
                       w.values[size_t(((o * cg + ci) * win.kh + ki) * win.kw + kj)];
              }
          y.values[size_t(((b * m + o) * oh + i) * ow + j)] = acc;
        }
  return y;
}

RefTensor conv_transpose(const onnx::NodeProto& node, const std::vector<RefTensor>& in) {
  const RefTensor &x = in[0], &w = in[1];
  const int64_t n = x.dims[0], c = x.dims[1], h = x.dims[2], wd = x.dims[3];
  const int64_t g = attr_int(node, "group", 1);
  const int64_t mg = w.dims[1], m = mg * g;
  if (w.dims[0] != c) throw std::runtime_error("ConvTranspose: weight mismatch");
  const Window win = window(node, w.dims[2], w.dims[3]);
  const int64_t oh = win.sh * (h - 1) + win.dh * (win.kh - 1) + 1 - win.pt - win.pb;
  const int64_t ow = win.sw * (wd - 1) + win.dw * (win.kw - 1) + 1 - win.pl - win.pr;
  RefTensor y{{n, m, oh, ow}, std::vector<double>(size_t(n * m * oh * ow))};
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t i = 0; i < oh * ow; ++i)
        y.values[size_t((b * m + o) * oh * ow + i)] =
            in.size() > 2 && !in[2].values.empty() ? in[2].values[size_t(o)] : 0.0;
  const int64_t cg = c / g;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < wd; ++j) {
          const double v = x.values[size_t(((b * c + ci) * h + i) * wd + j)];
          const int64_t group = ci / cg;
          for (int64_t oc = 0; oc < mg; ++oc)
            for (int64_t ki = 0; ki < win.kh; ++ki)
              for (int64_t kj = 0; kj < win.kw; ++kj) {
                const int64_t yi = i * win.sh - win.pt + ki * win.dh;
                const int64_t yj = j * win.sw - win.pl + kj * win.dw;
                if (yi < 0 || yi >= oh || yj < 0 || yj >= ow) continue;
                const int64_t o = group * mg + oc;
                y.values[size_t(((b * m + o) * oh + yi) * ow + yj)] +=
                    v * w.values[size_t(((ci * mg + oc) * win.kh + ki) * win.kw + kj)];
              }
        }
  return y;
}

RefTensor pool(const onnx::NodeProto& node, const RefTensor& x, bool max, bool global) {
  const int64_t n = x.dims[0], c = x.dims[1], h = x.dims[2], wd = x.dims[3];
  const Window win = global ? Window{h, wd, 1, 1, 1, 1, 0, 0, 0, 0} : window(node, 0, 0);
  const bool include_pad = attr_int(node, "count_include_pad", 0) != 0;
  const int64_t oh = out_dim(h, win.kh, win.sh, 1, win.pt, win.pb);
  const int64_t ow = out_dim(wd, win.kw, win.sw, 1, win.pl, win.pr);
  RefTensor y{{n, c, oh, ow}, std::vector<double>(size_t(n * c * oh * ow))};
  for (int64_t p = 0; p < n * c; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t inside = 0, padded = 0;
        for (int64_t ki = 0; ki < win.kh; ++ki)
          for (int64_t kj = 0; kj < win.kw; ++kj) {
            const int64_t yi = i * win.sh - win.pt + ki, xj = j * win.sw - win.pl + kj;
            // Positions in the declared pads count for count_include_pad.
            if (yi >= -win.pt && yi < h + win.pb && xj >= -win.pl && xj < wd + win.pr) ++padded;
            if (yi < 0 || yi >= h || xj < 0 || xj >= wd) continue;
            const double v = x.values[size_t((p * h + yi) * wd + xj)];
            acc = max ? std::max(acc, v) : acc + v;
            ++inside;
          }
        if (!max) acc /= double(include_pad ? padded : inside);
        y.values[size_t((p * oh + i) * ow + j)] = acc;
      }
  return y;
}

RefTensor lrn(const onnx::NodeProto& node, const RefTensor& x) {
  const int64_t size = attr_int(node, "size", 0);
  const double alpha = attr_float(node, "alpha", 1e-4), beta = attr_float(node, "beta", 0.75);
  const double bias = attr_float(node, "bias", 1.0);
  const int64_t n = x.dims[0], c = x.dims[1], inner = x.count() / (n * c);
  RefTensor y = x;
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0;
        for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(c - 1, ch + after); ++k) {
          const double v = x.values[size_t((b * c + k) * inner + i)];
          sum += v * v;
        }
        const size_t at = size_t((b * c + ch) * inner + i);
        y.values[at] = x.values[at] / std::pow(bias + alpha / double(size) * sum, beta);
      }
  return y;
}

RefTensor gemm(const onnx::NodeProto& node, const std::vector<RefTensor>& in) {
  const bool ta = attr_int(node, "transA", 0) != 0, tb = attr_int(node, "transB", 0) != 0;
  const double alpha = attr_float(node, "alpha", 1.0), beta = attr_float(node, "beta", 1.0);
  const RefTensor &a = in[0], &b = in[1];
  const int64_t m = ta ? a.dims[1] : a.dims[0], k = ta ? a.dims[0] : a.dims[1];
  const int64_t n = tb ? b.dims[0] : b.dims[1];
  if ((tb ? b.dims[1] : b.dims[0]) != k) throw std::runtime_error("Gemm: inner sizes differ");
  RefTensor y{{m, n}, std::vector<double>(size_t(m * n))};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < k; ++l)
        acc += a.values[size_t(ta ? l * m + i : i * k + l)] *
               b.values[size_t(tb ? j * k + l : l * n + j)];
      double c = 0;
      if (in.size() > 2 && !in[2].values.empty()) {
        const RefTensor& cb = in[2];  // broadcast: scalar, (n), (1, n), (m, 1) or (m, n)
        const int64_t rows = cb.dims.size() == 2 ? cb.dims[0] : 1;
        const int64_t cols = cb.dims.empty() ? 1 : cb.dims.back();
        c = cb.values[size_t((rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j))];
      }
      y.values[size_t(i * n + j)] = alpha * acc + beta * c;
    }
  return y;
}

RefTensor batch_norm(const onnx::NodeProto& node, const std::vector<RefTensor>& in) {
  const double eps = attr_float(node, "epsilon", 1e-5);
  if (attr_int(node, "training_mode", 0) != 0) throw std::runtime_error("training_mode");
  const RefTensor& x = in[0];
  const int64_t n = x.dims[0], c = x.dims[1], inner = x.count() / (n * c);
  RefTensor y = x;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      const size_t k = size_t(ch);
      const double inv = 1.0 / std::sqrt(in[4].values[k] + eps);
      for (int64_t i = 0; i < inner; ++i) {
        double& v = y.values[size_t((b * c + ch) * inner + i)];
        v = (v - in[3].values[k]) * inv * in[1].values[k] + in[2].values[k];
      }
    }
  return y;
}

RefTensor softmax(const onnx::NodeProto& node, const RefTensor& x) {
  const int64_t rank = int64_t(x.dims.size());
  int64_t axis = attr_int(node, "axis", -1);
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dims[size_t(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= x.dims[size_t(i)];
  const int64_t c = x.dims[size_t(axis)];
  RefTensor y = x;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double top = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t k = 0; k < c; ++k)
        top = std::max(top, x.values[size_t((o * c + k) * inner + i)]);
      for (int64_t k = 0; k < c; ++k)
        sum += std::exp(x.values[size_t((o * c + k) * inner + i)] - top);
      for (int64_t k = 0; k < c; ++k) {
        double& v = y.values[size_t((o * c + k) * inner + i)];
        v = std::exp(v - top) / sum;
      }
    }
  return y;
}

}  // namespace

std::vector<RefTensor> run_nn_node(const onnx::NodeProto& node, const std::vector<RefTensor>& in,
                                   bool* handled) {
  *handled = true;
  const std::string& op = node.op_type();
  if (op == "Conv") return {conv(node, in)};
  if (op == "ConvTranspose") return {conv_transpose(node, in)};
  if (op == "MaxPool") return {pool(node, in[0], true, false)};
  if (op == "AveragePool") return {pool(node, in[0], false, false)};
  if (op == "GlobalMaxPool") return {pool(node, in[0], true, true)};
  if (op == "GlobalAveragePool") return {pool(node, in[0], false, true)};
  if (op == "LRN") return {lrn(node, in[0])};
  if (op == "Gemm") return {gemm(node, in)};
  if (op == "BatchNormalization") return {batch_norm(node, in)};
  if (op == "Softmax") return {softmax(node, in[0])};
  *handled = false;
  return {};
}

}  // namespace crema::test
