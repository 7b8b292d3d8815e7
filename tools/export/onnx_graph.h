// OnnxGraph: writes the nodes, initializers and value names of an ONNX graph for the exporter
// (onnx_export.h). Every name it hands out is unique in the graph, so converters never collide
// with each other or with the user's blob names.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace crema {

class OnnxGraph {
 public:
  explicit OnnxGraph(onnx::GraphProto* graph) : graph_(graph) {}

  // `base` when no value or node has that name yet, else base_1, base_2, ... Reserves it.
  std::string unique_name(const std::string& base);
  // Reserves a name a caller picked (a graph input's); false when it is taken.
  bool reserve(const std::string& name) { return names_.insert(name).second; }
  bool taken(const std::string& name) const { return names_.count(name) > 0; }

  // A node of the default domain; its name is made unique from `name`. Outputs are used as
  // given: callers reserve them.
  onnx::NodeProto* add_node(const std::string& op, const std::string& name,
                            const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs);
  // A node with one output named unique_name(output_base); returns that name, and the node in
  // *node when given (for its attributes).
  std::string add_op(const std::string& op, const std::string& name,
                     const std::vector<std::string>& inputs, const std::string& output_base,
                     onnx::NodeProto** node = nullptr);

  // Constant tensors: float32 and int64 initializers; the returned names are unique.
  std::string add_float(const std::string& name, const std::vector<int64_t>& dims,
                        const std::vector<float>& values);
  std::string add_int64(const std::string& name, const std::vector<int64_t>& dims,
                        const std::vector<int64_t>& values);
  std::string add_scalar(const std::string& name, float value) {
    return add_float(name, {}, {value});
  }

 private:
  onnx::GraphProto* graph_;
  std::set<std::string> names_;
};

// Attributes of a node.
void set_attr(onnx::NodeProto* node, const std::string& name, int64_t value);
void set_attr(onnx::NodeProto* node, const std::string& name, float value);
void set_attr(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values);

// A float32 value's type with its shape; dims equal to -1 become the symbolic dimension
// `symbol`.
void set_tensor_type(onnx::ValueInfoProto* value, const std::vector<int64_t>& dims,
                     const std::string& symbol);

}  // namespace crema
