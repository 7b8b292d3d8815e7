// `crema draw`: a net as a Graphviz graph, in the manner of Caffe's draw_net.py. Each layer is a
// box with its name, type and the parameters that shape its output; each blob is an octagon;
// edges run from bottoms to layers to tops. A layer computed in place (its top is its bottom,
// as a ReLU after a convolution) hangs off its blob by a dashed edge instead of looping back to
// it, so the graph stays acyclic and reads left to right (or as rankdir says).
#pragma once

#include <string>

#include "crema.pb.h"

namespace crema {

struct DrawOptions {
  std::string rankdir = "LR";  // Graphviz's: LR, RL, TB or BT
  std::string phase;           // TRAIN or TEST keeps that phase's layers; empty draws all
};

// The graph in Graphviz's DOT language. Names are escaped, so any layer or blob name is safe.
// Throws crema::Error for a rankdir or phase it does not know.
std::string net_to_dot(const NetParameter& net, const DrawOptions& options);

// Writes the drawing to path, in the format its extension names: .dot as text; .svg, .png or
// .pdf through Graphviz's `dot` program. The file appears whole or not at all. Throws
// crema::Error for another extension, when `dot` is not installed, or when it fails.
void draw_net(const NetParameter& net, const DrawOptions& options, const std::string& path);

}  // namespace crema
