// `crema draw`: NetParameter -> DOT text -> Graphviz.
#include "backends/draw_net.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/errors.h"
#include "core/net_graph.h"
#include "core/proto_io.h"

extern char** environ;

namespace crema {
namespace {

// A string inside DOT's double quotes.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// "5", "3x5": a repeated size field, or its _h/_w form, or the default.
template <typename Repeated>
std::string dims(const Repeated& values, bool has_hw, uint32_t h, uint32_t w, uint32_t fallback) {
  if (has_hw) return std::to_string(h) + "x" + std::to_string(w);
  if (values.empty()) return std::to_string(fallback);
  std::string s;
  for (int i = 0; i < values.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(values.Get(i));
  }
  return s;
}

// The lines under a layer's name and type: what decides its output's shape.
std::vector<std::string> layer_details(const LayerParameter& l) {
  const std::string& t = l.type();
  if (t == "Convolution" || t == "Deconvolution") {
    const ConvolutionParameter& c = l.convolution_param();
    std::vector<std::string> d = {
        std::to_string(c.num_output()) + " outputs",
        "kernel " + dims(c.kernel_size(), c.has_kernel_h(), c.kernel_h(), c.kernel_w(), 0) +
            ", stride " + dims(c.stride(), c.has_stride_h(), c.stride_h(), c.stride_w(), 1) +
            ", pad " + dims(c.pad(), c.has_pad_h(), c.pad_h(), c.pad_w(), 0)};
    if (c.group() > 1) d.push_back("group " + std::to_string(c.group()));
    return d;
  }
  if (t == "Pooling") {
    const PoolingParameter& p = l.pooling_param();
    const std::string mode = PoolingParameter_PoolMethod_Name(p.pool());
    if (p.global_pooling()) return {mode + ", global"};
    std::string s =
        mode + " " +
        (p.has_kernel_h() ? std::to_string(p.kernel_h()) + "x" + std::to_string(p.kernel_w())
                          : std::to_string(p.kernel_size())) +
        ", stride " +
        (p.has_stride_h() ? std::to_string(p.stride_h()) + "x" + std::to_string(p.stride_w())
                          : std::to_string(p.stride()));
    if (p.pad() > 0 || p.has_pad_h())
      s += ", pad " + (p.has_pad_h() ? std::to_string(p.pad_h()) + "x" + std::to_string(p.pad_w())
                                     : std::to_string(p.pad()));
    return {s};
  }
  if (t == "InnerProduct")
    return {std::to_string(l.inner_product_param().num_output()) + " outputs"};
  if (t == "LRN") return {"local size " + std::to_string(l.lrn_param().local_size())};
  if (t == "Dropout") {
    std::ostringstream s;
    s << "ratio " << l.dropout_param().dropout_ratio();
    return {s.str()};
  }
  return {};
}

const char* layer_color(const std::string& type) {
  if (type == "Convolution" || type == "Deconvolution") return "#F4A582";
  if (type == "Pooling") return "#92C5DE";
  if (type == "InnerProduct") return "#B2ABD2";
  if (type.size() >= 4 && type.compare(type.size() - 4, 4, "Loss") == 0) return "#F6E8A6";
  if (type == "Data" || type == "ImageData" || type == "Input" || type == "DummyData" ||
      type == "MemoryData" || type == "HDF5Data" || type == "WindowData")
    return "#C7E9C0";
  return "#E0E0E0";
}

// Runs argv, its standard error to err_path; returns its exit status, or -1 with errno set
// when it cannot be started.
int run(const std::vector<std::string>& argv, const std::string& err_path) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  pid_t pid = 0;
  const int started = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (started != 0) {
    errno = started;
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string first_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) fail("cannot write ", path, ": ", std::strerror(errno));
}

}  // namespace

std::string net_to_dot(const NetParameter& in, const DrawOptions& options) {
  const std::vector<std::string> dirs = {"LR", "RL", "TB", "BT"};
  CREMA_REQUIRE(std::find(dirs.begin(), dirs.end(), options.rankdir) != dirs.end(),
                "rankdir must be LR, RL, TB or BT, got \"", options.rankdir, "\"");
  CREMA_REQUIRE(options.phase.empty() || options.phase == "TRAIN" || options.phase == "TEST",
                "phase must be TRAIN or TEST (or empty for all layers), got \"", options.phase,
                "\"");
  NetParameter net = in;
  if (!options.phase.empty()) {
    net.mutable_state()->set_phase(options.phase == "TRAIN" ? TRAIN : TEST);
    net = filter_net(net);
  }
  std::ostringstream dot;
  dot << "digraph " << quoted(net.name().empty() ? "net" : net.name()) << " {\n"
      << "  rankdir=" << options.rankdir << ";\n"
      << "  node [fontname=\"Helvetica\", fontsize=10];\n"
      << "  edge [color=\"#555555\"];\n";
  std::vector<std::string> blobs;  // drawn so far
  const auto blob_node = [&](const std::string& name) {
    const std::string id = quoted("blob " + name);
    if (std::find(blobs.begin(), blobs.end(), name) == blobs.end()) {
      blobs.push_back(name);
      dot << "  " << id
          << " [shape=octagon, style=filled, fillcolor=\"#FFFFFF\", label=" << quoted(name)
          << "];\n";
    }
    return id;
  };
  for (int i = 0; i < net.layer_size(); ++i) {
    const LayerParameter& l = net.layer(i);
    std::string label = l.name() + "\n(" + l.type() + ")";
    for (const std::string& d : layer_details(l)) label += "\n" + d;
    const std::string id = quoted("layer " + std::to_string(i));
    dot << "  " << id << " [shape=box, style=\"rounded,filled\", fillcolor=\""
        << layer_color(l.type()) << "\", label=" << quoted(label) << "];\n";
    // (blob_node writes the blob's node first: it must not land inside the edge's line.)
    for (const std::string& bottom : l.bottom()) {
      const bool in_place = std::find(l.top().begin(), l.top().end(), bottom) != l.top().end();
      const std::string blob = blob_node(bottom);
      dot << "  " << blob << " -> " << id << (in_place ? " [style=dashed, arrowhead=none]" : "")
          << ";\n";
    }
    for (const std::string& top : l.top()) {
      if (std::find(l.bottom().begin(), l.bottom().end(), top) != l.bottom().end()) continue;
      const std::string blob = blob_node(top);
      dot << "  " << id << " -> " << blob << ";\n";
    }
  }
  dot << "}\n";
  return dot.str();
}

void draw_net(const NetParameter& net, const DrawOptions& options, const std::string& path) {
  const std::string dot = net_to_dot(net, options);
  const size_t period = path.find_last_of('.');
  std::string format = period == std::string::npos ? "" : path.substr(period + 1);
  std::transform(format.begin(), format.end(), format.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  CREMA_REQUIRE(format == "dot" || format == "svg" || format == "png" || format == "pdf", path,
                ": name the drawing .svg, .png, .pdf or .dot");
  if (format == "dot") {
    write_file_atomic(dot, path);
    return;
  }
  // Graphviz draws beside the target, renamed over it: the file appears whole or not at all.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const std::string source = tmp + ".dot", errors = tmp + ".err";
  write_file(source, dot);
  const int status = run({"dot", "-T" + format, "-o", tmp, source}, errors);
  const int spawn_errno = errno;
  const std::string why = first_line_of(errors);
  std::remove(source.c_str());
  std::remove(errors.c_str());
  if (status != 0) std::remove(tmp.c_str());
  if (status < 0 && spawn_errno == ENOENT)
    fail(path,
         ": drawing needs Graphviz's dot (Debian: apt-get install graphviz); "
         "name the file .dot to write the graph without it");
  if (status < 0) fail(path, ": cannot run Graphviz's dot: ", std::strerror(spawn_errno));
  if (status != 0) fail(path, ": Graphviz's dot failed (exit ", status, "): ", why);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    fail("cannot write ", path, ": ", std::strerror(e));
  }
}

}  // namespace crema
