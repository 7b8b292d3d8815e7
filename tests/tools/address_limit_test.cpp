// Under an address-space limit (ulimit -v) crema either trains or stops with one
// "crema: error:" line, at every limit and at once: OpenBLAS, which retries a buffer mapping that
// fails forever, never gets to hang a GEMM or the exit.
#include <gtest/gtest.h>

#include <string>

#include "core/proto_io.h"
#include "data/data_test_util.h"
#include "run_command.h"
#include "solver/data_parallel_util.h"
#include "test_util.h"

namespace crema {
namespace {

TEST(AddressLimit, EveryLimitTrainsOrStopsWithOneLine) {
  if (test::kAddressSanitizer)
    GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space";
  test::TempDir dir;
  test::write_records(dir.file("records"));
  SolverParameter p = test::records_solver(dir.file("records"), 16, "");
  write_text_proto_atomic(p, dir.file("solver.prototxt"));
  int trained = 0, stopped = 0;
  for (int mib = 256; mib <= 4096; mib += 128) {
    SCOPED_TRACE(std::to_string(mib) + " MiB");
    const test::CommandResult r = test::run_command(
        "ulimit -v " + std::to_string(mib * 1024) + " && timeout 60 " + CREMA_BINARY_DIR +
        "/crema train --solver=" + dir.file("solver.prototxt") + " --overwrite_snapshots");
    // Before crema runs: 127, the dynamic loader could not map a library; 130, OpenBLAS's
    // library constructor could not start its threads and raised SIGINT (each with its own
    // message). Which limits end there depends on the size of the binary.
    const bool before_main =
        r.status == 127 ||
        (r.status == 130 &&
         r.output.find("blas_thread_init: pthread_create failed") != std::string::npos);
    ASSERT_TRUE(r.status == 0 || r.status == 1 || before_main) << r.output;
    if (r.status == 1) {
      EXPECT_EQ(r.last_line.rfind("crema: error: ", 0), 0u) << r.output;
      ++stopped;
    }
    trained += r.status == 0;
  }
  // The scan crosses from too little to enough.
  EXPECT_GT(trained, 0);
  EXPECT_GT(stopped, 0);
}

}  // namespace
}  // namespace crema
