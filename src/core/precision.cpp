// Precision fields of nets and layers: defaults, the math mode they mean, the --precision flag.
#include "core/precision.h"

#include "core/errors.h"
#include "core/layer_place.h"
#include "core/upgrade_proto.h"

namespace crema {
namespace {

void require_float(const LayerParameter& layer, const char* field, Type t) {
  if (t != DOUBLE && t != FLOAT && t != FLOAT16 && t != BFLOAT16)
    fail(layer_place(layer), "layer ", layer.name(), ": ", field, " ", Type_Name(t),
         " is not a float type (DOUBLE, FLOAT, FLOAT16 or BFLOAT16)");
}

prim::MathMode math_of(bool has, Type t, prim::Device device) {
  if (!has) return device == prim::Device::kCPU ? prim::MathMode::kFP32 : prim::MathMode::kTF32;
  switch (t) {
    case FLOAT16:
      return prim::MathMode::kFP16;
    case BFLOAT16:
      return prim::MathMode::kBF16;
    default:
      return prim::MathMode::kFP32;
  }
}

}  // namespace

void resolve_layer_precision(const NetParameter& net, LayerParameter* layer) {
  if (!layer->has_forward_type() && net.has_default_forward_type())
    layer->set_forward_type(net.default_forward_type());
  if (!layer->has_backward_type() && net.has_default_backward_type())
    layer->set_backward_type(net.default_backward_type());
  if (!layer->has_forward_math()) {
    if (net.has_default_forward_math())
      layer->set_forward_math(net.default_forward_math());
    else if (net.has_default_forward_type())
      layer->set_forward_math(net.default_forward_type());
  }
  if (!layer->has_backward_math()) {
    if (net.has_default_backward_math())
      layer->set_backward_math(net.default_backward_math());
    else if (net.has_default_backward_type())
      layer->set_backward_math(net.default_backward_type());
  }
  if (layer->has_forward_math()) require_float(*layer, "forward_math", layer->forward_math());
  if (layer->has_backward_math()) require_float(*layer, "backward_math", layer->backward_math());
}

prim::MathMode layer_forward_math(const LayerParameter& layer, prim::Device device) {
  return math_of(layer.has_forward_math(), layer.forward_math(), device);
}

prim::MathMode layer_backward_math(const LayerParameter& layer, prim::Device device) {
  return math_of(layer.has_backward_math(), layer.backward_math(), device);
}

bool layer_wants_half_storage(const LayerParameter& layer) {
  auto half = [](Type t) { return t == FLOAT16 || t == BFLOAT16; };
  return half(layer.forward_type()) || half(layer.backward_type());
}

void apply_precision_flag(const std::string& precision, NetParameter* net) {
  auto clear_layers = [&](bool types) {
    for (LayerParameter& l : *net->mutable_layer()) {
      l.clear_forward_math();
      l.clear_backward_math();
      if (types) {
        l.clear_forward_type();
        l.clear_backward_type();
      }
    }
  };
  auto set_defaults = [&](Type t) {
    net->set_default_forward_math(t);
    net->set_default_backward_math(t);
  };
  if (precision == "fp32") {
    clear_layers(false);
    set_defaults(FLOAT);
  } else if (precision == "tf32") {
    clear_layers(true);
    net->clear_default_forward_type();
    net->clear_default_backward_type();
    net->clear_default_forward_math();
    net->clear_default_backward_math();
  } else if (precision == "bf16" || precision == "fp16") {
    // Half-size storage where the layers allow (net_storage.cpp) and tensor-core math.
    clear_layers(true);
    const Type t = precision == "bf16" ? BFLOAT16 : FLOAT16;
    set_defaults(t);
    net->set_default_forward_type(t);
    net->set_default_backward_type(t);
    // float16's range ends at 65504 and its smallest subnormal is 6e-8: gradients need the
    // adaptive loss scale unless the file chose its own scaling.
    if (precision == "fp16" && !net->has_global_grad_scale() &&
        !net->has_global_grad_scale_adaptive())
      net->set_global_grad_scale_adaptive(true);
  } else {
    fail("--precision must be fp32, tf32, bf16 or fp16, got '", precision, "'");
  }
}

void apply_precision_flag(const std::string& precision, SolverParameter* solver) {
  if (solver->has_net()) *solver->mutable_net_param() = load_net_param_text(solver->net());
  if (solver->has_train_net())
    *solver->mutable_train_net_param() = load_net_param_text(solver->train_net());
  for (const std::string& path : solver->test_net())
    *solver->add_test_net_param() = load_net_param_text(path);
  solver->clear_net();
  solver->clear_train_net();
  solver->clear_test_net();
  if (solver->has_net_param()) apply_precision_flag(precision, solver->mutable_net_param());
  if (solver->has_train_net_param())
    apply_precision_flag(precision, solver->mutable_train_net_param());
  for (NetParameter& net : *solver->mutable_test_net_param()) apply_precision_flag(precision, &net);
}

}  // namespace crema
