// A solver prototxt: text parse, upgrade (solver_type to type), the learning-rate policy's
// checks, and the rate it gives over a span of iterations (integer and floating arithmetic on
// untrusted fields).
#include "core/proto_io.h"
#include "core/upgrade_proto.h"
#include "fuzz_util.h"
#include "solver/lr_policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  crema::fuzz::refused_or_accepted([&] {
    crema::SolverParameter solver;
    crema::read_text_proto_string(std::string(crema::fuzz::bytes_of(data, size)), "solver.prototxt",
                                  &solver);
    crema::upgrade_solver(&solver, "solver.prototxt");
    crema::check_lr_policy(solver);
    int step = 0;
    for (int iter : {0, 1, 2, 1000, 65535, 1 << 30, 2147483647})
      crema::learning_rate(solver, iter, &step);
  });
  return 0;
}
