// tools/plot_training_log.py over a real `crema train` log: each of Caffe's chart types (test
// accuracy and loss, learning rate, training loss, against iterations or seconds) is drawn to a
// PNG or SVG with points in it; a bad chart or a log without the values is one clear error.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "core/proto_io.h"
#include "data/data_test_util.h"
#include "run_command.h"
#include "solver/data_parallel_util.h"

namespace crema {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

class Plot : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test::run_command("python3 -c 'import matplotlib'").status != 0)
      GTEST_SKIP() << "needs python3 with matplotlib";
    test::write_records(dir_.file("records"));
    SolverParameter p =
        test::records_solver(dir_.file("records"), 16, "test_iter: 2 test_interval: 2");
    p.set_display(1);
    p.set_max_iter(8);
    write_text_proto_atomic(p, dir_.file("solver.prototxt"));
    const test::CommandResult r = test::run_command(
        std::string(CREMA_BINARY_DIR) + "/crema train --solver=" + dir_.file("solver.prototxt"));
    ASSERT_EQ(r.status, 0) << r.output;
    std::ofstream(log_) << r.output;
  }
  test::CommandResult plot(const std::string& chart, const std::string& out) const {
    return test::run_command(std::string(CREMA_SOURCE_DIR) + "/tools/plot_training_log.py " +
                             chart + " " + out + " " + log_);
  }
  test::TempDir dir_;
  const std::string log_ = dir_.file("train.log");
};

TEST_F(Plot, EveryChartTypeDrawsTheLogsCurve) {
  for (int chart = 0; chart < 8; ++chart) {
    SCOPED_TRACE(chart);
    const std::string png = dir_.file("chart" + std::to_string(chart) + ".png");
    const test::CommandResult r = plot(std::to_string(chart), png);
    ASSERT_EQ(r.status, 0) << r.output;
    const std::string bytes = read_file(png);
    EXPECT_EQ(bytes.rfind("\x89PNG", 0), 0u);
    EXPECT_GT(bytes.size(), 10000u);
  }
  const test::CommandResult r = plot("train-loss-iters", dir_.file("loss.svg"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string svg = read_file(dir_.file("loss.svg"));
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  // The curve: a path with a point per displayed iteration (markers below 50 points).
  EXPECT_NE(svg.find("<path"), std::string::npos);
}

TEST_F(Plot, BadChartsAndEmptyLogsAreErrors) {
  test::CommandResult r = plot("9", dir_.file("x.png"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("plot_training_log: error: unknown chart '9'"), std::string::npos)
      << r.output;
  std::ofstream(dir_.file("empty.log")) << "nothing here\n";
  r = test::run_command(std::string(CREMA_SOURCE_DIR) + "/tools/plot_training_log.py 0 " +
                        dir_.file("x.png") + " " + dir_.file("empty.log"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("plot_training_log: error: no log has test-accuracy values"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace crema
