// The reference evaluator: initializers, the node loop, and the element-wise and data-moving
// operators (numpy broadcasting for the binary ones).
#include "onnx_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>

namespace crema::test {

int64_t RefTensor::count() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t attr_int(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}

double attr_float(const onnx::NodeProto& node, const std::string& name, double fallback) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return a.f();
  return fallback;
}

std::vector<int64_t> attr_ints(const onnx::NodeProto& node, const std::string& name,
                               const std::vector<int64_t>& fallback) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  return fallback;
}

namespace {

RefTensor from_initializer(const onnx::TensorProto& t) {
  RefTensor r{{t.dims().begin(), t.dims().end()}, {}};
  const size_t n = size_t(r.count());
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    if (!t.raw_data().empty()) {
      std::vector<float> f(t.raw_data().size() / sizeof(float));
      std::memcpy(f.data(), t.raw_data().data(), f.size() * sizeof(float));
      r.values.assign(f.begin(), f.end());
    } else {
      r.values.assign(t.float_data().begin(), t.float_data().end());
    }
  } else if (t.data_type() == onnx::TensorProto::INT64) {
    if (!t.raw_data().empty()) {
      std::vector<int64_t> v(t.raw_data().size() / sizeof(int64_t));
      std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(int64_t));
      r.values.assign(v.begin(), v.end());
    } else {
      r.values.assign(t.int64_data().begin(), t.int64_data().end());
    }
  } else {
    throw std::runtime_error("initializer " + t.name() + ": type not implemented");
  }
  if (r.values.size() != n) throw std::runtime_error("initializer " + t.name() + ": size");
  return r;
}

RefTensor unary(const RefTensor& x, const std::function<double(double)>& f) {
  RefTensor y = x;
  for (double& v : y.values) v = f(v);
  return y;
}

// numpy broadcasting of two operands.
RefTensor binary(const RefTensor& a, const RefTensor& b,
                 const std::function<double(double, double)>& f) {
  const size_t rank = std::max(a.dims.size(), b.dims.size());
  std::vector<int64_t> da(rank, 1), db(rank, 1), dy(rank);
  std::copy(a.dims.begin(), a.dims.end(), da.begin() + long(rank - a.dims.size()));
  std::copy(b.dims.begin(), b.dims.end(), db.begin() + long(rank - b.dims.size()));
  for (size_t i = 0; i < rank; ++i) {
    if (da[i] != db[i] && da[i] != 1 && db[i] != 1) throw std::runtime_error("broadcast mismatch");
    dy[i] = std::max(da[i], db[i]);
  }
  RefTensor y{dy, {}};
  y.values.resize(size_t(y.count()));
  std::vector<int64_t> idx(rank, 0);
  for (int64_t flat = 0; flat < y.count(); ++flat) {
    int64_t ia = 0, ib = 0;
    for (size_t i = 0; i < rank; ++i) {
      ia = ia * da[i] + (da[i] == 1 ? 0 : idx[i]);
      ib = ib * db[i] + (db[i] == 1 ? 0 : idx[i]);
    }
    y.values[size_t(flat)] = f(a.values[size_t(ia)], b.values[size_t(ib)]);
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < dy[i]) break;
      idx[i] = 0;
    }
  }
  return y;
}

RefTensor fold(const std::vector<RefTensor>& in, const std::function<double(double, double)>& f) {
  RefTensor acc = in[0];
  for (size_t i = 1; i < in.size(); ++i) acc = binary(acc, in[i], f);
  return acc;
}

int64_t axis_of(const onnx::NodeProto& node, int64_t fallback, size_t rank) {
  const int64_t a = attr_int(node, "axis", fallback);
  return a < 0 ? a + int64_t(rank) : a;
}

// Outer (before axis), size at axis and inner (after) of a shape.
void split_at(const std::vector<int64_t>& d, int64_t axis, int64_t* outer, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (int64_t i = 0; i < axis; ++i) *outer *= d[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < d.size(); ++i) *inner *= d[i];
}

RefTensor reshape(const RefTensor& x, const RefTensor& shape) {
  std::vector<int64_t> d;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.values.size(); ++i) {
    int64_t v = int64_t(shape.values[i]);
    if (v == 0) v = x.dims.at(i);
    if (v == -1)
      infer = int64_t(i);
    else
      known *= v;
    d.push_back(v);
  }
  if (infer >= 0) d[size_t(infer)] = x.count() / known;
  RefTensor y{d, x.values};
  if (y.count() != x.count()) throw std::runtime_error("Reshape: count differs");
  return y;
}

RefTensor concat(const onnx::NodeProto& node, const std::vector<RefTensor>& in) {
  const int64_t axis = axis_of(node, 0, in[0].dims.size());
  int64_t outer, inner;
  split_at(in[0].dims, axis, &outer, &inner);
  RefTensor y{in[0].dims, {}};
  y.dims[size_t(axis)] = 0;
  for (const RefTensor& t : in) y.dims[size_t(axis)] += t.dims[size_t(axis)];
  for (int64_t o = 0; o < outer; ++o)
    for (const RefTensor& t : in) {
      const int64_t block = t.dims[size_t(axis)] * inner;
      y.values.insert(y.values.end(), t.values.begin() + long(o * block),
                      t.values.begin() + long((o + 1) * block));
    }
  return y;
}

std::vector<RefTensor> split(const onnx::NodeProto& node, const std::vector<RefTensor>& in) {
  const RefTensor& x = in[0];
  const int64_t axis = axis_of(node, 0, x.dims.size());
  int64_t outer, inner;
  split_at(x.dims, axis, &outer, &inner);
  std::vector<RefTensor> out;
  int64_t start = 0;
  for (double s : in.at(1).values) {
    RefTensor y{x.dims, {}};
    y.dims[size_t(axis)] = int64_t(s);
    for (int64_t o = 0; o < outer; ++o) {
      const auto base = x.values.begin() + long((o * x.dims[size_t(axis)] + start) * inner);
      y.values.insert(y.values.end(), base, base + long(int64_t(s) * inner));
    }
    start += int64_t(s);
    out.push_back(y);
  }
  if (start != x.dims[size_t(axis)]) throw std::runtime_error("Split: sizes do not add up");
  return out;
}

RefTensor slice(const std::vector<RefTensor>& in) {
  const RefTensor& x = in[0];
  const size_t rank = x.dims.size();
  std::vector<int64_t> lo(rank, 0), hi = x.dims;
  for (size_t k = 0; k < in[1].values.size(); ++k) {
    int64_t axis = in.size() > 3 ? int64_t(in[3].values[k]) : int64_t(k);
    if (axis < 0) axis += int64_t(rank);
    if (in.size() > 4 && in[4].values[k] != 1) throw std::runtime_error("Slice: steps");
    const int64_t d = x.dims[size_t(axis)];
    auto clamp = [d](double v) {
      int64_t i = int64_t(v);
      if (i < 0) i += d;
      return std::clamp<int64_t>(i, 0, d);
    };
    lo[size_t(axis)] = clamp(in[1].values[k]);
    hi[size_t(axis)] = clamp(in[2].values[k]);
  }
  RefTensor y{{}, {}};
  for (size_t i = 0; i < rank; ++i) y.dims.push_back(std::max<int64_t>(0, hi[i] - lo[i]));
  std::vector<int64_t> idx(rank, 0);
  for (int64_t flat = 0; flat < y.count(); ++flat) {
    int64_t src = 0;
    for (size_t i = 0; i < rank; ++i) src = src * x.dims[i] + lo[i] + idx[i];
    y.values.push_back(x.values[size_t(src)]);
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < y.dims[i]) break;
      idx[i] = 0;
    }
  }
  return y;
}

RefTensor pad(const std::vector<RefTensor>& in) {
  const RefTensor& x = in[0];
  const size_t rank = x.dims.size();
  const std::vector<double>& p = in[1].values;
  const double fill = in.size() > 2 && !in[2].values.empty() ? in[2].values[0] : 0.0;
  RefTensor y{x.dims, {}};
  for (size_t i = 0; i < rank; ++i) y.dims[i] += int64_t(p[i]) + int64_t(p[i + rank]);
  y.values.assign(size_t(y.count()), fill);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t flat = 0; flat < x.count(); ++flat) {
    int64_t dst = 0;
    for (size_t i = 0; i < rank; ++i) dst = dst * y.dims[i] + idx[i] + int64_t(p[i]);
    y.values[size_t(dst)] = x.values[size_t(flat)];
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < x.dims[i]) break;
      idx[i] = 0;
    }
  }
  return y;
}

RefTensor argmax(const onnx::NodeProto& node, const RefTensor& x) {
  const int64_t axis = axis_of(node, 0, x.dims.size());
  if (attr_int(node, "keepdims", 1) != 1) throw std::runtime_error("ArgMax: keepdims 0");
  int64_t outer, inner;
  split_at(x.dims, axis, &outer, &inner);
  const int64_t c = x.dims[size_t(axis)];
  RefTensor y{x.dims, {}};
  y.dims[size_t(axis)] = 1;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t k = 1; k < c; ++k)
        if (x.values[size_t((o * c + k) * inner + i)] >
            x.values[size_t((o * c + best) * inner + i)])
          best = k;
      y.values.push_back(double(best));
    }
  return y;
}

RefTensor tile(const RefTensor& x, const RefTensor& repeats) {
  const size_t rank = x.dims.size();
  RefTensor y{x.dims, {}};
  for (size_t i = 0; i < rank; ++i) y.dims[i] *= int64_t(repeats.values.at(i));
  y.values.resize(size_t(y.count()));
  std::vector<int64_t> idx(rank, 0);
  for (int64_t flat = 0; flat < y.count(); ++flat) {
    int64_t src = 0;
    for (size_t i = 0; i < rank; ++i) src = src * x.dims[i] + idx[i] % x.dims[i];
    y.values[size_t(flat)] = x.values[size_t(src)];
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < y.dims[i]) break;
      idx[i] = 0;
    }
  }
  return y;
}

// ReduceSum (axes as input 1), ReduceMean, ReduceL1, ReduceSumSquare (axes as an attribute).
RefTensor reduce(const onnx::NodeProto& node, const std::vector<RefTensor>& in) {
  const RefTensor& x = in[0];
  const size_t rank = x.dims.size();
  std::vector<int64_t> axes;
  if (node.op_type() == "ReduceSum") {
    for (double a : in.at(1).values) axes.push_back(int64_t(a));
  } else {
    axes = attr_ints(node, "axes", {});
  }
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) reduced[size_t(a < 0 ? a + int64_t(rank) : a)] = true;
  const bool keep = attr_int(node, "keepdims", 1) != 0;
  std::vector<int64_t> kept_dims;  // the output's dims with 1 at reduced axes
  for (size_t i = 0; i < rank; ++i) kept_dims.push_back(reduced[i] ? 1 : x.dims[i]);
  RefTensor y{kept_dims, {}};
  y.values.assign(size_t(y.count()), 0.0);
  std::vector<double> n(size_t(y.count()), 0.0);
  std::vector<int64_t> idx(rank, 0);
  const std::string& op = node.op_type();
  for (int64_t flat = 0; flat < x.count(); ++flat) {
    int64_t dst = 0;
    for (size_t i = 0; i < rank; ++i) dst = dst * kept_dims[i] + (reduced[i] ? 0 : idx[i]);
    const double v = x.values[size_t(flat)];
    y.values[size_t(dst)] += op == "ReduceL1" ? std::abs(v) : op == "ReduceSumSquare" ? v * v : v;
    n[size_t(dst)] += 1;
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < x.dims[i]) break;
      idx[i] = 0;
    }
  }
  if (op == "ReduceMean")
    for (size_t i = 0; i < y.values.size(); ++i) y.values[i] /= n[i];
  if (!keep) {
    y.dims.clear();
    for (size_t i = 0; i < rank; ++i)
      if (!reduced[i]) y.dims.push_back(x.dims[i]);
  }
  return y;
}

std::vector<RefTensor> run_node(const onnx::NodeProto& node, const std::vector<RefTensor>& in) {
  bool handled = false;
  std::vector<RefTensor> nn = run_nn_node(node, in, &handled);
  if (handled) return nn;
  const std::string& op = node.op_type();
  const RefTensor& x = in.at(0);
  if (op == "Relu") return {unary(x, [](double v) { return v > 0 ? v : 0.0; })};
  if (op == "LeakyRelu") {
    const double a = attr_float(node, "alpha", 0.01);
    return {unary(x, [a](double v) { return v > 0 ? v : a * v; })};
  }
  if (op == "Elu") {
    const double a = attr_float(node, "alpha", 1.0);
    return {unary(x, [a](double v) { return v > 0 ? v : a * (std::exp(v) - 1); })};
  }
  if (op == "PRelu")
    return {binary(x, in[1], [](double v, double s) { return v > 0 ? v : s * v; })};
  if (op == "Sigmoid") return {unary(x, [](double v) { return 1 / (1 + std::exp(-v)); })};
  if (op == "Tanh") return {unary(x, [](double v) { return std::tanh(v); })};
  if (op == "Abs") return {unary(x, [](double v) { return std::abs(v); })};
  if (op == "Softplus") return {unary(x, [](double v) { return std::log1p(std::exp(v)); })};
  if (op == "Exp") return {unary(x, [](double v) { return std::exp(v); })};
  if (op == "Log") return {unary(x, [](double v) { return std::log(v); })};
  if (op == "Identity" || op == "Cast") return {x};
  if (op == "Add") return {binary(x, in[1], std::plus<double>())};
  if (op == "Mul") return {binary(x, in[1], std::multiplies<double>())};
  if (op == "Sub") return {binary(x, in[1], std::minus<double>())};
  if (op == "Div") return {binary(x, in[1], std::divides<double>())};
  if (op == "Sqrt") return {unary(x, [](double v) { return std::sqrt(v); })};
  if (op == "Tile") return {tile(x, in.at(1))};
  if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceL1" || op == "ReduceSumSquare")
    return {reduce(node, in)};
  if (op == "Pow") return {binary(x, in[1], [](double a, double b) { return std::pow(a, b); })};
  if (op == "Greater")
    return {binary(x, in[1], [](double a, double b) { return a > b ? 1.0 : 0.0; })};
  if (op == "Sum") return {fold(in, std::plus<double>())};
  if (op == "Max") return {fold(in, [](double a, double b) { return std::max(a, b); })};
  if (op == "Clip") {
    const double lo = in[1].values.at(0), hi = in[2].values.at(0);
    return {unary(x, [lo, hi](double v) { return std::min(std::max(v, lo), hi); })};
  }
  if (op == "Flatten") {
    const int64_t axis = axis_of(node, 1, x.dims.size());
    int64_t rows = 1;
    for (int64_t i = 0; i < axis; ++i) rows *= x.dims[size_t(i)];
    return {RefTensor{{rows, x.count() / rows}, x.values}};
  }
  if (op == "Reshape") return {reshape(x, in[1])};
  if (op == "Concat") return {concat(node, in)};
  if (op == "Split") return split(node, in);
  if (op == "Slice") return {slice(in)};
  if (op == "Pad") return {pad(in)};
  if (op == "ArgMax") return {argmax(node, x)};
  throw std::runtime_error("reference evaluator: operator " + op + " is not implemented");
}

}  // namespace

RefValues run_onnx_reference(const onnx::ModelProto& model, const RefValues& inputs) {
  RefValues values = inputs;
  const onnx::GraphProto& g = model.graph();
  for (const onnx::TensorProto& t : g.initializer()) values[t.name()] = from_initializer(t);
  for (const onnx::NodeProto& node : g.node()) {
    std::vector<RefTensor> in;
    for (const std::string& name : node.input()) {
      if (name.empty()) {
        in.push_back({});
        continue;
      }
      const auto it = values.find(name);
      if (it == values.end())
        throw std::runtime_error("node " + node.name() + ": no value " + name);
      in.push_back(it->second);
    }
    std::vector<RefTensor> out = run_node(node, in);
    if (out.size() != size_t(node.output_size()))
      throw std::runtime_error("node " + node.name() + ": output count");
    for (size_t i = 0; i < out.size(); ++i) values[node.output(int(i))] = std::move(out[i]);
  }
  RefValues outputs;
  for (const onnx::ValueInfoProto& v : g.output()) outputs[v.name()] = values.at(v.name());
  return outputs;
}

}  // namespace crema::test
