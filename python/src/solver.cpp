// Solvers for Python, as pycaffe's: SGDSolver and the other types force the type, get_solver
// takes the file's. The solver trains on the device of the current mode (set_mode_gpu), as in
// pycaffe, whatever the file's solver_mode says. Ctrl-C during solve() or step() stops the
// solver after its current iteration and raises KeyboardInterrupt.
#include "solver/solver.h"

#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings.h"
#include "core/upgrade_proto.h"

namespace crema::python {
namespace {

struct OwnedSolver {
  std::unique_ptr<prim::Handle> handle;  // outlives the solver (declared first)
  std::unique_ptr<Solver<float>> solver;
  bool interrupted = false;
  bool overwrite_snapshots = false;
};
using SolverPtr = std::shared_ptr<OwnedSolver>;

SolverPtr make_solver(const std::string& path, const std::string& type) {
  SolverParameter param = load_solver_param(path);
  if (!type.empty()) param.set_type(type);
  auto owned = std::make_shared<OwnedSolver>();
  owned->handle = std::make_unique<prim::Handle>(mode().device, mode().device_id);
  owned->solver = create_solver<float>(param, mode().device, *owned->handle, path);
  // Python reads any blob after a step or a test, as in Caffe: no blob shares its memory.
  owned->solver->net().own_activation_memory();
  for (const auto& net : owned->solver->test_nets()) net->own_activation_memory();
  OwnedSolver* self = owned.get();
  owned->solver->set_action_source([self] {
    py::gil_scoped_acquire locked;
    if (PyErr_CheckSignals() == 0) return SolverAction::kNone;
    self->interrupted = true;
    return SolverAction::kStop;
  });
  return owned;
}

std::shared_ptr<NetRef> net_ref(const SolverPtr& s, Net<float>* net) {
  return std::make_shared<NetRef>(NetRef{std::shared_ptr<Net<float>>(s, net),
                                         std::shared_ptr<prim::Handle>(s, s->handle.get())});
}

// Runs f with the interpreter free for other threads; a Ctrl-C it saw is raised afterwards.
template <typename F>
void run_solver(OwnedSolver& s, F f) {
  upload_host_copies();
  s.interrupted = false;
  {
    py::gil_scoped_release unlocked;
    f(*s.solver);
  }
  if (s.interrupted) throw py::error_already_set();
}

}  // namespace

void bind_solver(py::module_& m) {
  py::class_<OwnedSolver, SolverPtr>(m, "Solver", "A solver made from a solver prototxt")
      .def(py::init([](const std::string& path) { return make_solver(path, ""); }),
           py::arg("filename"))
      .def_property_readonly("type",
                             [](const OwnedSolver& s) { return std::string(s.solver->type()); })
      .def_property_readonly("net",
                             [](const SolverPtr& s) { return net_ref(s, &s->solver->net()); })
      .def_property_readonly("test_nets",
                             [](const SolverPtr& s) {
                               std::vector<std::shared_ptr<NetRef>> nets;
                               for (const auto& n : s->solver->test_nets())
                                 nets.push_back(net_ref(s, n.get()));
                               return nets;
                             })
      .def_property_readonly("iter", [](const OwnedSolver& s) { return s.solver->iter(); })
      .def_property_readonly(
          "loss", [](const OwnedSolver& s) { return s.solver->last_loss(); },
          "the loss of the latest iteration")
      .def_property_readonly("smoothed_loss",
                             [](const OwnedSolver& s) { return s.solver->smoothed_loss(); })
      .def_property(
          "overwrite_snapshots", [](const OwnedSolver& s) { return s.overwrite_snapshots; },
          [](OwnedSolver& s, bool on) {
            s.overwrite_snapshots = on;
            s.solver->set_overwrite_snapshots(on);
          },
          "solve() without a state to resume refuses to overwrite existing snapshots of its "
          "prefix unless this is set")
      .def(
          "solve",
          [](OwnedSolver& s, const std::string& resume) {
            run_solver(s, [&](Solver<float>& solver) { solver.solve(resume); });
          },
          py::arg("resume_file") = "", "trains to max_iter, restoring resume_file first if given")
      .def(
          "step",
          [](OwnedSolver& s, int iters) {
            run_solver(s, [&](Solver<float>& solver) { solver.step(iters); });
          },
          py::arg("iters"), "runs iters training iterations")
      .def(
          "restore",
          [](OwnedSolver& s, const std::string& state) {
            run_solver(s, [&](Solver<float>& solver) { solver.restore(state); });
          },
          py::arg("state_file"), "loads a .solverstate (and the weights it names)")
      .def(
          "snapshot",
          [](OwnedSolver& s) {
            std::string path;
            run_solver(s, [&](Solver<float>& solver) { path = solver.snapshot(); });
            return path;
          },
          "writes <prefix>_iter_N.caffemodel and .solverstate; returns the .solverstate's path")
      .def(
          "test_all",
          [](OwnedSolver& s) {
            std::vector<std::vector<TestScore>> scores;
            run_solver(s, [&](Solver<float>& solver) { scores = solver.test_all(); });
            py::list nets;
            for (const auto& net : scores) {
              py::dict d;
              for (const TestScore& score : net) d[py::str(score.name)] = score.value;
              nets.append(d);
            }
            return nets;
          },
          "runs every test net test_iter times; returns each one's mean outputs by name");

  m.def(
      "_make_solver",
      [](const std::string& path, const std::string& type) { return make_solver(path, type); },
      py::arg("filename"), py::arg("type"));
  m.def("solver_types", &solver_types, "the solver type names get_solver knows");
}

}  // namespace crema::python
