// OnnxGraph: unique names, nodes, initializers and attributes of the exported graph.
#include "export/onnx_graph.h"

#include <glog/logging.h>

namespace crema {

std::string OnnxGraph::unique_name(const std::string& base) {
  std::string name = base;
  for (int i = 1; names_.count(name); ++i) name = base + "_" + std::to_string(i);
  names_.insert(name);
  return name;
}

onnx::NodeProto* OnnxGraph::add_node(const std::string& op, const std::string& name,
                                     const std::vector<std::string>& inputs,
                                     const std::vector<std::string>& outputs) {
  onnx::NodeProto* node = graph_->add_node();
  node->set_op_type(op);
  node->set_name(unique_name(name));
  for (const std::string& in : inputs) node->add_input(in);
  for (const std::string& out : outputs) node->add_output(out);
  return node;
}

std::string OnnxGraph::add_op(const std::string& op, const std::string& name,
                              const std::vector<std::string>& inputs,
                              const std::string& output_base, onnx::NodeProto** node) {
  const std::string out = unique_name(output_base);
  onnx::NodeProto* added = add_node(op, name, inputs, {out});
  if (node) *node = added;
  return out;
}

std::string OnnxGraph::add_float(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<float>& values) {
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(unique_name(name));
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t count = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    count *= d;
  }
  CHECK_EQ(count, int64_t(values.size())) << name;
  // Raw little-endian bytes: the compact form every runtime reads.
  t->set_raw_data(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t->name();
}

std::string OnnxGraph::add_int64(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& values) {
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(unique_name(name));
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
  return t->name();
}

void set_attr(onnx::NodeProto* node, const std::string& name, int64_t value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void set_attr(onnx::NodeProto* node, const std::string& name, float value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

void set_attr(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void set_tensor_type(onnx::ValueInfoProto* value, const std::vector<int64_t>& dims,
                     const std::string& symbol) {
  onnx::TypeProto_Tensor* t = value->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  onnx::TensorShapeProto* shape = t->mutable_shape();
  for (int64_t d : dims) {
    if (d < 0)
      shape->add_dim()->set_dim_param(symbol);
    else
      shape->add_dim()->set_dim_value(d);
  }
}

}  // namespace crema
