// crema train's log in Caffe's format, so Caffe's log parsers (parse_log.py, parse_log.sh) and
// the plots built on them read it: every glog line starts "<severity><MMDD> <hh:mm:ss.uuuuuu>
// <thread> <file>:<line>] " with no year (the parsers read the month from the first two digits),
// and the lines they extract keep Caffe's wording.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "core/proto_io.h"
#include "data/data_test_util.h"
#include "run_command.h"
#include "solver/data_parallel_util.h"

namespace crema {
namespace {

TEST(LogFormat, TrainingLogsReadAsCaffes) {
  test::TempDir dir;
  const std::string db = dir.file("records");
  test::write_records(db);
  SolverParameter p = test::records_solver(db, 16, "test_iter: 2 test_interval: 2");
  p.set_display(1);
  const std::string solver = dir.file("solver.prototxt");
  write_text_proto_atomic(p, solver);
  const test::CommandResult r =
      test::run_command(std::string(CREMA_BINARY_DIR) + "/crema train --solver=" + solver);
  ASSERT_EQ(r.status, 0) << r.output;

  const std::regex prefix(R"(^[IWEF](\d\d)(\d\d) \d\d:\d\d:\d\d\.\d{6} +\d+ [^ :]+:\d+\] )");
  const std::vector<std::pair<const char*, std::regex>> wanted = {
      {"train loss", std::regex(R"(\] Iteration \d+ .*loss = [-+.\deE]+$)")},
      {"learning rate", std::regex(R"(\] Iteration \d+, lr = [-+.\deE]+$)")},
      {"train output", std::regex(R"(\]     Train net output #0: loss = [-+.\deE]+)")},
      {"test start", std::regex(R"(\] Iteration \d+, Testing net \(#0\)$)")},
      {"test output", std::regex(R"(\]     Test net output #\d+: \S+ = [-+.\deE]+)")}};
  std::vector<int> seen(wanted.size(), 0);
  std::istringstream lines(r.output);
  int glog_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, prefix)) continue;
    ++glog_lines;
    const int month = std::stoi(m[1]), day = std::stoi(m[2]);
    EXPECT_TRUE(month >= 1 && month <= 12 && day >= 1 && day <= 31) << line;
    for (size_t i = 0; i < wanted.size(); ++i) seen[i] += std::regex_search(line, wanted[i].second);
  }
  EXPECT_GT(glog_lines, 20) << r.output;
  for (size_t i = 0; i < wanted.size(); ++i)
    EXPECT_GT(seen[i], 0) << "no " << wanted[i].first << " line in:\n" << r.output;
  // A line with the year in its prefix ("I20261126 ...") would read as month 20.
  EXPECT_EQ(r.output.find("\nI20"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace crema
