// crema train's log in Caffe's format, so Caffe's log parsers (parse_log.py, parse_log.sh) and
// the plots built on them read it: every glog line starts "<severity><MMDD> <hh:mm:ss.uuuuuu>
// <thread> <file>:<line>] " with no year (the parsers read the month from the first two digits),
// and the lines they extract keep Caffe's wording. With CREMA_CAFFE_TOOLS naming Caffe's
// tools/extra folder, Caffe's own parse_log.sh and parse_log.py read a crema log.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/proto_io.h"
#include "data/data_test_util.h"
#include "run_command.h"
#include "solver/data_parallel_util.h"

namespace crema {
namespace {

// `crema train` with default flags on a small net that tests every two iterations.
test::CommandResult train(const test::TempDir& dir) {
  const std::string db = dir.file("records");
  test::write_records(db);
  SolverParameter p = test::records_solver(db, 16, "test_iter: 2 test_interval: 2");
  p.set_display(1);
  const std::string solver = dir.file("solver.prototxt");
  write_text_proto_atomic(p, solver);
  return test::run_command(std::string(CREMA_BINARY_DIR) + "/crema train --solver=" + solver);
}

TEST(LogFormat, TrainingLogsReadAsCaffes) {
  test::TempDir dir;
  const test::CommandResult r = train(dir);
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

// The values of one kind of log line, in order: the first capture of every line that matches.
std::vector<std::string> captures(const std::string& log, const std::regex& re) {
  std::vector<std::string> found;
  std::istringstream lines(log);
  std::smatch m;
  for (std::string line; std::getline(lines, line);)
    if (std::regex_search(line, m, re)) found.push_back(m[1]);
  return found;
}

// Rows of a table file (whitespace or comma separated), the header first.
std::vector<std::vector<std::string>> table(const std::string& path, char separator) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (separator != ' ') std::replace(line.begin(), line.end(), separator, ' ');
    std::istringstream cells(line);
    rows.emplace_back();
    for (std::string cell; cells >> cell;) rows.back().push_back(cell);
  }
  return rows;
}

std::vector<std::string> column(const std::vector<std::vector<std::string>>& rows, size_t c) {
  std::vector<std::string> out;
  for (size_t r = 1; r < rows.size(); ++r) out.push_back(c < rows[r].size() ? rows[r][c] : "");
  return out;
}

std::vector<double> numbers(const std::vector<std::string>& cells) {
  std::vector<double> out;
  for (const std::string& c : cells) out.push_back(std::strtod(c.c_str(), nullptr));
  return out;
}

// Caffe's parse_log.sh and parse_log.py (made Python 3: their one print statement becomes a
// call; `python` is python3) turn a crema log into the same tables they make of Caffe's.
TEST(LogFormat, CaffesParseLogScriptsReadIt) {
  const char* tools = std::getenv("CREMA_CAFFE_TOOLS");
  if (!tools) GTEST_SKIP() << "set CREMA_CAFFE_TOOLS to Caffe's tools/extra folder";
  if (test::run_command("command -v column").status != 0) GTEST_SKIP() << "needs column(1)";
  test::TempDir dir;
  const test::CommandResult r = train(dir);
  ASSERT_EQ(r.status, 0) << r.output;
  std::ofstream(dir.file("crema.log")) << r.output;
  // Caffe's scripts in a folder of their own; parse_log.py's one print statement made a call.
  const std::string caffe = dir.file("caffe");
  ASSERT_EQ(test::run_command("mkdir -p " + caffe + " " + dir.file("bin") + " && cp " + tools +
                              "/parse_log.sh " + tools + "/extract_seconds.py " + caffe +
                              " && chmod +x " + caffe + "/*" +
                              " && ln -sf \"$(command -v python3)\" " + dir.file("bin/python"))
                .status,
            0);
  std::ifstream py2(std::string(tools) + "/parse_log.py");
  ASSERT_TRUE(py2) << tools << "/parse_log.py";
  std::ostringstream text;
  text << py2.rdbuf();
  std::ofstream(caffe + "/parse_log.py")
      << std::regex_replace(text.str(), std::regex(R"(( *)print ('.*))"), "$1print($2)");
  const std::string setup = "cd " + dir.file(".") + " && PATH=" + dir.file("bin") + ":$PATH ";
  test::CommandResult sh = test::run_command(setup + "bash caffe/parse_log.sh crema.log");
  ASSERT_EQ(sh.status, 0) << sh.output;
  ASSERT_EQ(test::run_command("mkdir -p " + dir.file("py")).status, 0);
  test::CommandResult py = test::run_command(setup + "python caffe/parse_log.py crema.log py");
  ASSERT_EQ(py.status, 0) << py.output;

  const std::string num = R"(([-+.\deE]+))";
  // Loss lines: one per display, and the solver's last ("Iteration 6, loss = ...", as Caffe's).
  const auto iters = captures(r.output, std::regex(R"(\] Iteration (\d+)[ ,].*loss = )"));
  const auto losses = captures(r.output, std::regex(R"(\] Iteration \d+[ ,].*loss = )" + num));
  const auto rates = captures(r.output, std::regex(R"(\] Iteration \d+, lr = )" + num));
  const auto test_iters = captures(r.output, std::regex(R"(\] Iteration (\d+), Testing net)"));
  const auto accuracy = captures(r.output, std::regex(R"(Test net output #0: acc = )" + num));
  const auto test_loss = captures(r.output, std::regex(R"(Test net output #1: loss = )" + num));
  ASSERT_GE(iters.size(), 5u) << r.output;
  ASSERT_GE(test_iters.size(), 3u) << r.output;

  // parse_log.sh: '#Iters Seconds TrainingLoss LearningRate' and '#Iters Seconds TestAccuracy
  // TestLoss', the values as the log printed them.
  const auto train_sh = table(dir.file("crema.log.train"), ' ');
  ASSERT_FALSE(train_sh.empty());
  EXPECT_EQ(train_sh[0],
            (std::vector<std::string>{"#Iters", "Seconds", "TrainingLoss", "LearningRate"}));
  EXPECT_EQ(column(train_sh, 0), iters);
  EXPECT_EQ(column(train_sh, 2), losses);
  // The last loss line has no rate line: parse_log.sh leaves its cell empty, as for Caffe's logs.
  std::vector<std::string> rate_cells = rates;
  rate_cells.resize(iters.size());
  EXPECT_EQ(column(train_sh, 3), rate_cells);
  for (double s : numbers(column(train_sh, 1))) EXPECT_TRUE(s >= 0 && s < 600) << s;
  const auto test_sh = table(dir.file("crema.log.test"), ' ');
  ASSERT_FALSE(test_sh.empty());
  EXPECT_EQ(test_sh[0],
            (std::vector<std::string>{"#Iters", "Seconds", "TestAccuracy", "TestLoss"}));
  EXPECT_EQ(column(test_sh, 0), test_iters);
  EXPECT_EQ(column(test_sh, 2), accuracy);
  EXPECT_EQ(column(test_sh, 3), test_loss);

  // parse_log.py: CSV tables NumIters,Seconds,LearningRate,<outputs>; the values as floats.
  const auto train_py = table(dir.file("py/crema.log.train"), ',');
  ASSERT_FALSE(train_py.empty());
  EXPECT_EQ(train_py[0], (std::vector<std::string>{"NumIters", "Seconds", "LearningRate", "loss"}));
  // Its train rows are the "Train net output" lines: every display but the solver's last line.
  const auto outputs = captures(r.output, std::regex(R"(Train net output #0: loss = )" + num));
  ASSERT_EQ(outputs.size() + 1, iters.size());
  EXPECT_EQ(numbers(column(train_py, 0)),
            numbers(std::vector<std::string>(iters.begin(), iters.end() - 1)));
  EXPECT_EQ(numbers(column(train_py, 3)), numbers(outputs));
  const auto test_py = table(dir.file("py/crema.log.test"), ',');
  ASSERT_FALSE(test_py.empty());
  EXPECT_EQ(test_py[0],
            (std::vector<std::string>{"NumIters", "Seconds", "LearningRate", "acc", "loss"}));
  EXPECT_EQ(numbers(column(test_py, 0)), numbers(test_iters));
  EXPECT_EQ(numbers(column(test_py, 3)), numbers(accuracy));
  EXPECT_EQ(numbers(column(test_py, 4)), numbers(test_loss));
}

}  // namespace
}  // namespace crema
