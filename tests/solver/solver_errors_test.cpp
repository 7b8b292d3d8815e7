// Tests of the solver's configuration errors (one clear crema::Error each) and of how it finds
// its nets: inline, by path, generic nets tested in the TEST phase.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "core/errors.h"
#include "core/hdf5_io.h"
#include "core/proto_io.h"
#include "proto_test_util.h"
#include "solver/solver.h"
#include "solver_test_util.h"

namespace crema {
namespace {

SolverParameter parse(const std::string& text) {
  return test::parse_text<SolverParameter>(text, "solver_errors_test");
}

// The message of the Error that creating the solver throws ("" when none is thrown).
std::string creation_error(const SolverParameter& p, const std::string& source = "") {
  Handle h;
  try {
    create_solver<float>(p, Device::kCPU, h, source);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_contains(const std::string& what, const std::string& part) {
  EXPECT_NE(what.find(part), std::string::npos) << "message: \"" << what << "\"";
}

const std::string kNet = "net_param { " + test::tiny_net_text(2) + " } ";

TEST(SolverErrors, NoNetwork) {
  const std::string what =
      creation_error(parse("base_lr: 0.1 lr_policy: \"fixed\""), "my_solver.prototxt");
  EXPECT_EQ(what,
            "solver my_solver.prototxt names no network (net, net_param, train_net or "
            "train_net_param)");
}

TEST(SolverErrors, TwoTrainNetworks) {
  expect_contains(creation_error(parse(kNet + "train_net: \"x.prototxt\" lr_policy: \"fixed\"")),
                  "more than one train network");
}

TEST(SolverErrors, UnknownSolverTypeListsKnownOnes) {
  const std::string what = creation_error(parse(kNet + "lr_policy: \"fixed\" type: \"Lion\""));
  expect_contains(what, "unknown solver type \"Lion\"");
  for (const char* t : {"SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"})
    expect_contains(what, t);
}

TEST(SolverErrors, TestIterCountMismatch) {
  const std::string train = "train_net_param { " + test::tiny_net_text(2) + " } ";
  const std::string test_net = "test_net_param { " + test::tiny_net_text(2) + " } ";
  expect_contains(creation_error(parse(train + test_net +
                                       "test_iter: 1 test_iter: 2 test_interval: 10 "
                                       "lr_policy: \"fixed\"")),
                  "1 test nets but 2 test_iter values");
  expect_contains(
      creation_error(parse(train + test_net + "test_interval: 10 lr_policy: \"fixed\"")),
      "1 test nets but 0 test_iter values");
  expect_contains(creation_error(parse(kNet + "test_iter: 1 lr_policy: \"fixed\"")),
                  "test_interval");
  expect_contains(creation_error(parse(kNet + "test_iter: 1 test_interval: 5 test_state { stage: "
                                              "\"a\" } test_state { stage: \"b\" } "
                                              "lr_policy: \"fixed\"")),
                  "test_state");
}

TEST(SolverErrors, BadSettings) {
  EXPECT_EQ(
      creation_error(parse(kNet + "lr_policy: \"fixed\" snapshot_format: HDF5")),
      hdf5::hdf5_available() ? "" : "solver: snapshot_format HDF5: crema was built without HDF5");
  expect_contains(creation_error(parse(kNet + "lr_policy: \"fixed\" regularization_type: "
                                              "\"L3\"")),
                  "unknown regularization_type \"L3\"");
  expect_contains(creation_error(parse(kNet + "lr_policy: \"warmup\"")),
                  "unknown lr_policy \"warmup\"");
  expect_contains(creation_error(parse(kNet + "lr_policy: \"step\" gamma: 0.1")), "stepsize");
  expect_contains(creation_error(parse(kNet + "lr_policy: \"fixed\" iter_size: 0")), "iter_size");
  expect_contains(creation_error(parse(kNet + "lr_policy: \"fixed\" average_loss: 0")),
                  "average_loss");
  expect_contains(
      creation_error(parse(kNet + "lr_policy: \"fixed\" type: \"AdaGrad\" momentum: 0.9")),
      "momentum cannot be used with AdaGrad");
  expect_contains(
      creation_error(parse(kNet + "lr_policy: \"fixed\" type: \"RMSProp\" momentum: 0.9")),
      "momentum cannot be used with RMSProp");
  expect_contains(
      creation_error(parse("net: \"/nonexistent/crema/net.prototxt\" lr_policy: \"fixed\"")),
      "/nonexistent/crema/net.prototxt");
}

// Settings that can only be mistakes, each named with its value (Caffe trains on with them to
// NaN losses, or never stops). Each case: the settings after the net, and what the message says.
TEST(SolverErrors, MistakenSettingsNameTheField) {
  const std::string fixed = "lr_policy: \"fixed\" ";
  const std::pair<std::string, std::string> cases[] = {
      {fixed + "base_lr: -0.01", "base_lr must be finite and >= 0, got -0.01"},
      {fixed + "base_lr: inf", "base_lr must be finite and >= 0, got inf"},
      {fixed + "momentum: 2", "momentum must be in [0, 1), got 2"},
      {fixed + "momentum: -0.5", "momentum must be in [0, 1), got -0.5"},
      {fixed + "type: \"Adam\" momentum2: 1", "momentum2 must be in [0, 1), got 1"},
      {fixed + "weight_decay: -100", "weight_decay must be finite and >= 0, got -100"},
      {fixed + "delta: -1", "delta must be finite and >= 0, got -1"},
      {fixed + "max_iter: -5", "max_iter must be >= 0, got -5"},
      {fixed + "snapshot: -1", "snapshot must be >= 0, got -1"},
      {fixed + "display: -1", "display must be >= 0, got -1"},
      {"base_lr: 0.1 lr_policy: \"poly\" power: -2 max_iter: 10",
       "lr_policy \"poly\": power must be >= 0, got -2"},
      {"base_lr: 0.1 lr_policy: \"inv\" gamma: 0.1 power: -0.75", "power must be >= 0"},
      {"base_lr: 0.1 lr_policy: \"multistep\" gamma: 0.1 stepvalue: 100 stepvalue: 50",
       "stepvalue 2 (50) must be >= 0 and above the one before"},
  };
  for (const auto& [settings, message] : cases) {
    SCOPED_TRACE(settings);
    const std::string what = creation_error(parse(kNet + settings));
    expect_contains(what, message);
    EXPECT_EQ(what.rfind("solver: ", 0), 0u) << what;
  }
  EXPECT_EQ(creation_error(parse(kNet + "base_lr: 0.1 lr_policy: \"multistep\" gamma: 0.1 "
                                        "stepvalue: 50 stepvalue: 100 momentum: 0.9")),
            "");
}

// A step whose loss is not finite: STOP (the default) ends training with an error naming the
// iteration and the first layer whose output went non-finite; SKIP drops the update; CONTINUE
// applies it, as Caffe does.
TEST(SolverErrors, NonFiniteLoss) {
  for (const std::string mode : {"", "non_finite_loss: SKIP", "non_finite_loss: CONTINUE"}) {
    SCOPED_TRACE(mode);
    Handle h;
    auto s = create_solver<float>(
        test::tiny_solver(4, "base_lr: 0.1 lr_policy: \"fixed\" momentum: 0.9 " + mode),
        Device::kCPU, h);
    test::set_batch(s->net(), 4);
    s->step(2);
    ASSERT_TRUE(std::isfinite(s->last_loss()));
    Tensor<float>* bias = s->net().layer_by_name("ip")->blobs()[1].get();
    std::vector<float> b = bias->data_vector();
    b[0] = std::nanf("");
    bias->set_data(b);
    const Tensor<float>* weight = s->net().layer_by_name("ip")->blobs()[0].get();
    const std::vector<float> before = weight->data_vector();
    std::string what;
    try {
      s->step(1);
    } catch (const Error& e) {
      what = e.what();
    }
    if (mode.empty()) {
      expect_contains(what, "Iteration 2: the loss is ");
      expect_contains(what,
                      "(the first layer whose output is not finite: ip); the training "
                      "diverged and stops");
      EXPECT_EQ(s->iter(), 2);
    } else {
      EXPECT_EQ(what, "");
      EXPECT_EQ(s->iter(), 3);
      EXPECT_FALSE(std::isfinite(s->last_loss()));
      // SKIP leaves the weights as they were; CONTINUE applies the (NaN) update.
      EXPECT_EQ(weight->data_vector() == before, mode.find("SKIP") != std::string::npos);
    }
  }
}

// A learning rate that overflows (exp with a huge gamma) is an error naming the iteration and the
// policy's fields, not a primitive's "coefficients must be finite".
TEST(SolverErrors, OverflowingLearningRateNamesTheIteration) {
  Handle h;
  auto s = create_solver<float>(
      test::tiny_solver(4, "base_lr: 1 lr_policy: \"exp\" gamma: 1e30 non_finite_loss: CONTINUE"),
      Device::kCPU, h);
  test::set_batch(s->net(), 4);
  std::string what;
  try {
    s->step(5);
  } catch (const Error& e) {
    what = e.what();
  }
  EXPECT_EQ(what,
            "Iteration 2: lr_policy \"exp\" gives a learning rate of inf (base_lr 1, gamma "
            "1e+30, power 0)");
}

// A learning rate that is finite until a layer's lr_mult multiplies it names that layer's blob.
TEST(SolverErrors, OverflowingLrMultNamesTheLayer) {
  Handle h;
  for (const char* spec : {"param { lr_mult: 1e38 }", "param { decay_mult: 1e38 }"}) {
    std::string net = test::tiny_net_text(4);
    const std::string ip = "layer { name: \"ip\" type: \"InnerProduct\"";
    ASSERT_NE(net.find(ip), std::string::npos);
    net.replace(net.find(ip), ip.size(), ip + " " + spec);
    SolverParameter p;
    read_text_proto_string("net_param { " + net +
                               " } random_seed: 7 base_lr: 1e10 weight_decay: 1e10 "
                               "lr_policy: \"fixed\"",
                           "overflow", &p);
    auto s = create_solver<float>(p, Device::kCPU, h);
    test::set_batch(s->net(), 4);
    std::string what;
    try {
      s->step(1);
    } catch (const Error& e) {
      what = e.what();
    }
    const bool rate = std::string(spec).find("lr_mult") != std::string::npos;
    EXPECT_EQ(what, rate ? "Iteration 0: layer ip, blob 0: the learning rate 1e+10 times lr_mult "
                           "1e+38 overflows"
                         : "Iteration 0: layer ip, blob 0: weight_decay 1e+10 times decay_mult "
                           "1e+38 overflows");
  }
}

TEST(SolverErrors, NetsFromFilesAndGenericTestNets) {
  const std::string dir = test::fresh_dir("solver_net_file");
  const std::string path = dir + "/net.prototxt";
  std::ofstream(path) << test::tiny_net_text(3);
  Handle h;
  auto s = create_solver<float>(
      parse("net: \"" + path +
            "\" test_iter: 2 test_iter: 1 test_interval: 10 lr_policy: \"fixed\" base_lr: 0.1"),
      Device::kCPU, h);
  // One test net per test_iter; in the TEST phase (the Accuracy layer is included).
  ASSERT_EQ(s->test_nets().size(), 2u);
  EXPECT_EQ(s->net().phase(), TRAIN);
  EXPECT_FALSE(s->net().has_blob("acc"));
  for (const auto& t : s->test_nets()) {
    EXPECT_EQ(t->phase(), TEST);
    EXPECT_TRUE(t->has_blob("acc"));
    // The test nets use the train net's weights.
    EXPECT_EQ(t->learnable_params()[0]->data(), s->net().learnable_params()[0]->data());
  }
}

}  // namespace
}  // namespace crema
