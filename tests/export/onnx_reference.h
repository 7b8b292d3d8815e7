// A reference evaluator of ONNX graphs for the exporter's tests: plain loops in double precision
// over the operators the exporter writes, following the ONNX operator documents (opset 17), and
// sharing no code with the exporter or with crema's layers. It is the oracle the exported models
// are run on and compared with crema's own forward.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace crema::test {

// A tensor of any element type held as doubles (int64 shapes and indices are exact up to 2^53).
struct RefTensor {
  std::vector<int64_t> dims;
  std::vector<double> values;

  int64_t count() const;
};

using RefValues = std::map<std::string, RefTensor>;

// Runs the graph's nodes in order on `inputs` (by graph input name) and its initializers;
// returns every graph output. Throws std::runtime_error for an operator, attribute or input it
// does not implement, and for shapes that do not fit.
RefValues run_onnx_reference(const onnx::ModelProto& model, const RefValues& inputs);

// One node's evaluation: ins are the node's inputs (absent optional inputs empty), returns its
// outputs. In two files: onnx_reference_nn.cpp (windows, matrices, normalization) and
// onnx_reference.cpp (element-wise and data movement).
std::vector<RefTensor> run_nn_node(const onnx::NodeProto& node, const std::vector<RefTensor>& ins,
                                   bool* handled);

// Attribute helpers.
int64_t attr_int(const onnx::NodeProto& node, const std::string& name, int64_t fallback);
double attr_float(const onnx::NodeProto& node, const std::string& name, double fallback);
std::vector<int64_t> attr_ints(const onnx::NodeProto& node, const std::string& name,
                               const std::vector<int64_t>& fallback);

}  // namespace crema::test
