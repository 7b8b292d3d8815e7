// Tests of snapshots and restore: resume is bit-identical to an uninterrupted run, a failed
// snapshot write throws and leaves the previous snapshot usable, a state of another net is
// refused, file naming and contents, snapshot_after_train, and the stop/snapshot request hook.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/proto_io.h"
#include "solver/solver.h"
#include "solver_test_util.h"

namespace crema {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::vector<std::vector<float>> all_weights(Net<float>& net) {
  std::vector<std::vector<float>> w;
  for (auto* p : net.learnable_params()) w.push_back(p->data_vector());
  return w;
}

std::vector<std::vector<float>> all_history(const Solver<float>& s) {
  std::vector<std::vector<float>> w;
  for (const auto& h : s.history()) w.push_back(h->data_vector());
  return w;
}

const int kBatch = 5;

std::unique_ptr<Solver<float>> make(const std::string& extra, int hidden, Handle& h) {
  auto s = create_solver<float>(test::tiny_solver(kBatch, extra, hidden), Device::kCPU, h);
  test::set_batch(s->net(), kBatch);
  return s;
}

TEST(Snapshot, ResumeIsBitIdenticalToAnUninterruptedRun) {
  const std::string dir = test::fresh_dir("solver_resume");
  const std::string extra =
      "base_lr: 0.1 lr_policy: \"multistep\" gamma: 0.5 stepvalue: 3 stepvalue: 7 "
      "momentum: 0.9 weight_decay: 0.01 max_iter: 10 snapshot: 5 snapshot_after_train: false "
      "snapshot_prefix: \"" +
      dir + "/tiny\"";
  Handle h;
  auto full = make(extra, 4, h);
  std::vector<float> losses;
  for (int i = 0; i < 10; ++i) {
    full->step(1);
    losses.push_back(full->last_loss());
  }
  ASSERT_TRUE(fs::exists(dir + "/tiny_iter_5.caffemodel"));
  ASSERT_TRUE(fs::exists(dir + "/tiny_iter_5.solverstate"));
  EXPECT_EQ(full->current_step(), 2);
  const auto weights = all_weights(full->net());
  const auto history = all_history(*full);

  // A new solver (other initial weights would not matter: restore replaces them).
  Handle h2;
  auto resumed = make(extra + " random_seed: 123", 4, h2);
  resumed->restore(dir + "/tiny_iter_5.solverstate");
  EXPECT_EQ(resumed->iter(), 5);
  EXPECT_EQ(resumed->current_step(), 1);
  for (int i = 5; i < 10; ++i) {
    resumed->step(1);
    EXPECT_EQ(resumed->last_loss(), losses[i]) << "iteration " << i;  // exact
  }
  EXPECT_EQ(all_weights(resumed->net()), weights);
  EXPECT_EQ(all_history(*resumed), history);
  EXPECT_EQ(resumed->current_step(), 2);
  // solve(resume_file) does the same.
  Handle h3;
  auto solved = make(extra, 4, h3);
  solved->solve(dir + "/tiny_iter_5.solverstate");
  EXPECT_EQ(solved->iter(), 10);
  EXPECT_EQ(all_weights(solved->net()), weights);
}

TEST(Snapshot, FilesNamesAndContents) {
  const std::string dir = test::fresh_dir("solver_files");
  const std::string prefix = dir + "/net";
  Handle h;
  auto s = make(
      "base_lr: 0.1 lr_policy: \"fixed\" momentum: 0.9 max_iter: 4 snapshot: 3 "
      "snapshot_prefix: \"" +
          prefix + "\"",
      0, h);
  s->solve();
  EXPECT_EQ(s->iter(), 4);
  EXPECT_TRUE(fs::exists(prefix + "_iter_3.caffemodel"));
  EXPECT_TRUE(fs::exists(prefix + "_iter_3.solverstate"));
  // snapshot_after_train writes the last iteration, which snapshot: 3 did not.
  SolverState state;
  read_binary_proto(prefix + "_iter_4.solverstate", &state);
  EXPECT_EQ(state.iter(), 4);
  EXPECT_EQ(state.learned_net(), prefix + "_iter_4.caffemodel");
  EXPECT_EQ(state.current_step(), 0);
  ASSERT_EQ(state.history_size(), 2);
  const auto history = all_history(*s);
  for (int i = 0; i < 2; ++i) {
    Tensor<float> t;
    t.from_proto(state.history(i));
    EXPECT_EQ(t.data_vector(), history[i]);
  }
  NetParameter model;
  read_binary_proto(prefix + "_iter_4.caffemodel", &model);
  bool found = false;
  for (const LayerParameter& lp : model.layer()) {
    if (lp.name() != "ip") continue;
    found = true;
    ASSERT_EQ(lp.blobs_size(), 2);
    Tensor<float> w;
    w.from_proto(lp.blobs(0));
    EXPECT_EQ(w.data_vector(), s->net().learnable_params()[0]->data_vector());
  }
  EXPECT_TRUE(found);
  // No temporary files are left behind.
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
}

TEST(Snapshot, FailedWriteThrowsAndKeepsThePreviousSnapshot) {
  const std::string dir = test::fresh_dir("solver_atomic");
  fs::create_directories(dir + "/sub");
  const std::string extra =
      "base_lr: 0.1 lr_policy: \"fixed\" momentum: 0.9 snapshot_prefix: \"" + dir + "/sub/tiny\"";
  Handle h;
  auto s = make(extra, 0, h);
  s->step(2);
  EXPECT_EQ(s->snapshot(), dir + "/sub/tiny_iter_2.solverstate");
  const auto weights2 = all_weights(s->net());
  const std::string model_bytes = read_bytes(dir + "/sub/tiny_iter_2.caffemodel");
  const std::string state_bytes = read_bytes(dir + "/sub/tiny_iter_2.solverstate");
  ASSERT_FALSE(model_bytes.empty());
  // The snapshot folder becomes unusable (a plain file where the folder was: this fails even
  // for root, unlike a permission change).
  fs::rename(dir + "/sub", dir + "/saved");
  std::ofstream(dir + "/sub") << "not a folder";
  s->step(1);
  try {
    s->snapshot();
    FAIL() << "snapshot into an unusable folder did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/sub/tiny_iter_3.caffemodel"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_bytes(dir + "/saved/tiny_iter_2.caffemodel"), model_bytes);
  EXPECT_EQ(read_bytes(dir + "/saved/tiny_iter_2.solverstate"), state_bytes);
  // The moved snapshot still restores: its learned_net is found beside the state file.
  Handle h2;
  auto r = make(extra, 0, h2);
  r->restore(dir + "/saved/tiny_iter_2.solverstate");
  EXPECT_EQ(r->iter(), 2);
  EXPECT_EQ(all_weights(r->net()), weights2);
}

// A missing snapshot folder is reported before the first iteration, not after the training
// time is spent; snapshot() itself still names the file it could not write.
TEST(Snapshot, MissingFolderIsReportedBeforeTraining) {
  const std::string dir = test::fresh_dir("solver_unwritable");
  const std::string prefix = dir + "/missing/deeper/tiny";
  Handle h;
  // Construction succeeds: the folder is only needed when training starts.
  auto s = make("base_lr: 0.1 lr_policy: \"fixed\" max_iter: 3 snapshot: 2 snapshot_prefix: \"" +
                    prefix + "\"",
                0, h);
  try {
    s->solve();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "snapshot_prefix \"" + prefix + "\": the folder " + dir +
                                         "/missing/deeper does not exist");
  }
  EXPECT_EQ(s->iter(), 0);
  try {
    s->snapshot();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(prefix + "_iter_0.caffemodel"), std::string::npos)
        << e.what();
  }
  // Without snapshots (none scheduled, none after training) the folder is never needed.
  auto quiet = make(
      "base_lr: 0.1 lr_policy: \"fixed\" max_iter: 3 snapshot_after_train: false "
      "snapshot_prefix: \"" +
          prefix + "\"",
      0, h);
  quiet->solve();
  EXPECT_EQ(quiet->iter(), 3);
}

// A snapshot removes the temporary files a killed run of the same prefix left behind (their
// process is gone), and leaves a live process's and other prefixes' alone.
TEST(Snapshot, StaleTemporariesOfThePrefixAreRemoved) {
  const std::string dir = test::fresh_dir("solver_stale_tmp");
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);  // now a pid of no process
  const std::string dead = std::to_string(child), live = std::to_string(getpid());
  const std::vector<std::string> stale = {dir + "/t_iter_7.caffemodel.tmp." + dead,
                                          dir + "/t_iter_7.solverstate.tmp." + dead};
  const std::vector<std::string> kept = {dir + "/t_iter_8.caffemodel.tmp." + live,
                                         dir + "/other_iter_7.caffemodel.tmp." + dead,
                                         dir + "/t_iter_7.caffemodel.tmp.x" + dead};
  for (const auto& f : stale) std::ofstream(f) << "partial";
  for (const auto& f : kept) std::ofstream(f) << "partial";
  Handle h;
  auto s = make("base_lr: 0.1 lr_policy: \"fixed\" snapshot_prefix: \"" + dir + "/t\"", 0, h);
  s->step(1);
  s->snapshot();
  for (const auto& f : stale) EXPECT_FALSE(fs::exists(f)) << f;
  for (const auto& f : kept) EXPECT_TRUE(fs::exists(f)) << f;
}

// A fresh run never overwrites an earlier run's snapshots of its prefix unless told to; resuming
// (which continues that run) may.
TEST(Snapshot, FreshRunRefusesAnEarlierRunsSnapshots) {
  const std::string dir = test::fresh_dir("solver_earlier_run");
  const std::string extra =
      "base_lr: 0.1 lr_policy: \"fixed\" max_iter: 4 snapshot: 2 "
      "snapshot_prefix: \"" +
      dir + "/t\"";
  Handle h;
  make(extra, 0, h)->solve();
  ASSERT_TRUE(fs::exists(dir + "/t_iter_4.caffemodel"));
  auto again = make(extra, 0, h);
  try {
    again->solve();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "snapshot_prefix \"" + dir + "/t\": snapshots of an earlier run exist (" + dir +
                  "/t_iter_2.caffemodel and 3 more); resume from one (--snapshot), choose another "
                  "snapshot_prefix, or pass --overwrite_snapshots");
  }
  EXPECT_EQ(again->iter(), 0);
  make(extra, 0, h)->solve(dir + "/t_iter_2.solverstate");  // resuming is continuing
  auto forced = make(extra, 0, h);
  forced->set_overwrite_snapshots(true);
  forced->solve();
  EXPECT_EQ(forced->iter(), 4);
}

// No snapshot_prefix: snapshots are named after the solver file, beside it.
TEST(Snapshot, PrefixDefaultsToTheSolverFile) {
  const std::string dir = test::fresh_dir("solver_default_prefix");
  Handle h;
  auto s = create_solver<float>(test::tiny_solver(kBatch, "base_lr: 0.1 lr_policy: \"fixed\""),
                                Device::kCPU, h, dir + "/my_solver.prototxt");
  test::set_batch(s->net(), kBatch);
  s->step(1);
  EXPECT_EQ(s->snapshot(), dir + "/my_solver_iter_1.solverstate");
  EXPECT_TRUE(fs::exists(dir + "/my_solver_iter_1.caffemodel"));
}

// A state with a negative iteration (INT_MIN would overflow max_iter - iter) is refused, and the
// solver is left as it was.
TEST(Snapshot, NegativeIterationIsRefused) {
  const std::string dir = test::fresh_dir("solver_negative_iter");
  Handle h;
  auto s = make("base_lr: 0.1 lr_policy: \"fixed\" snapshot_prefix: \"" + dir + "/t\"", 0, h);
  s->step(1);
  const std::string state_file = s->snapshot();
  SolverState state;
  read_binary_proto(state_file, &state);
  state.set_iter(-2147483647 - 1);
  write_binary_proto_atomic(state, state_file);
  auto r = make("base_lr: 0.1 lr_policy: \"fixed\"", 0, h);
  try {
    r->restore(state_file);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot restore " + state_file +
                                         ": its iteration (-2147483648) and multistep position "
                                         "(0) must be >= 0");
  }
  EXPECT_EQ(r->iter(), 0);
}

TEST(Snapshot, StateOfAnotherNetIsRefused) {
  const std::string dir = test::fresh_dir("solver_other_net");
  const std::string extra =
      "base_lr: 0.1 lr_policy: \"fixed\" momentum: 0.9 snapshot_prefix: \"" + dir + "/a\"";
  Handle h;
  auto a = make(extra, 4, h);
  a->step(1);
  const std::string state = a->snapshot();
  // Same parameter count, other shapes.
  auto wider = make(extra, 5, h);
  const auto before = all_weights(wider->net());
  try {
    wider->restore(state);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("history blob 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(state), std::string::npos) << e.what();
  }
  EXPECT_EQ(wider->iter(), 0);
  EXPECT_EQ(all_weights(wider->net()), before);
  // Another parameter count.
  auto smaller = make(extra, 0, h);
  try {
    smaller->restore(state);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds 4 history blobs"), std::string::npos) << e.what();
  }
  // Another solver type (Adam keeps two history sets).
  auto adam = make(extra + " type: \"Adam\"", 4, h);
  EXPECT_THROW(adam->restore(state), Error);
  EXPECT_THROW(a->restore(dir + "/a_iter_1.h5"), Error);
  EXPECT_THROW(a->restore(dir + "/missing.solverstate"), Error);
}

TEST(Snapshot, WeightsFieldInitializesTheNets) {
  const std::string dir = test::fresh_dir("solver_weights");
  Handle h;
  auto trained = make("base_lr: 0.5 lr_policy: \"fixed\" snapshot_prefix: \"" + dir + "/t\"", 0, h);
  trained->step(3);
  trained->snapshot();
  const auto weights = all_weights(trained->net());
  auto fresh = make(
      "base_lr: 0.1 lr_policy: \"fixed\" test_iter: 1 test_interval: 10 "
      "random_seed: 5 weights: \"" +
          dir + "/t_iter_3.caffemodel\"",
      0, h);
  EXPECT_EQ(fresh->iter(), 0);
  EXPECT_EQ(all_weights(fresh->net()), weights);
  EXPECT_EQ(fresh->test_nets()[0]->learnable_params()[0]->data_vector(), weights[0]);
  Handle h2;
  try {
    create_solver<float>(
        test::tiny_solver(2, "lr_policy: \"fixed\" weights: \"" + dir + "/none.caffemodel\""),
        Device::kCPU, h2);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/none.caffemodel"), std::string::npos) << e.what();
  }
}

TEST(Snapshot, RequestsSnapshotAndStop) {
  const std::string dir = test::fresh_dir("solver_requests");
  Handle h;
  auto s = make(
      "base_lr: 0.1 lr_policy: \"fixed\" max_iter: 100 test_iter: 1 test_interval: 2 "
      "snapshot_prefix: \"" +
          dir + "/r\"",
      0, h);
  test::set_batch(*s->test_nets()[0], kBatch);
  int polls = 0;
  s->set_action_source([&polls]() {
    ++polls;
    return polls == 2   ? SolverAction::kSnapshot
           : polls == 5 ? SolverAction::kStop
                        : SolverAction::kNone;
  });
  s->solve();
  EXPECT_TRUE(s->stopped_early());
  // Polls: #1 in the test at iteration 0, #2 after the update to 1 (snapshot), #3 after the
  // update to 2, #4 in the test at 2, #5 after the update to 3 (stop; snapshot_after_train).
  EXPECT_EQ(polls, 5);
  EXPECT_EQ(s->iter(), 3);
  EXPECT_TRUE(fs::exists(dir + "/r_iter_1.solverstate"));
  EXPECT_FALSE(fs::exists(dir + "/r_iter_2.solverstate"));
  EXPECT_TRUE(fs::exists(dir + "/r_iter_3.solverstate"));
  EXPECT_FALSE(fs::exists(dir + "/r_iter_100.solverstate"));
  // The test at iteration 2 ran and recorded its scores.
  ASSERT_EQ(s->test_scores().size(), 1u);
  EXPECT_EQ(s->test_scores()[0].size(), 2u);
}

}  // namespace
}  // namespace crema
