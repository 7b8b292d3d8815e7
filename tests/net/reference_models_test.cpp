// The reference model files under models/: every prototxt parses, every train_val builds in both
// phases (with its Data layers turned into Input layers of the same shapes, since tests have no
// LMDBs), the published shapes and parameter counts come out, trained weights of a train_val fit
// its deploy net, and one forward + backward of each deploy net at batch 1 gives finite values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/net.h"
#include "core/net_graph.h"
#include "core/upgrade_proto.h"
#include "primitives/handle.h"
#include "test_util.h"

namespace crema {
namespace {

using Shape = std::vector<int64_t>;
using ParamShapes = std::map<std::string, std::vector<Shape>>;

std::string model_path(const std::string& rel) { return std::string(CREMA_SOURCE_DIR) + "/" + rel; }

// Data layers read LMDBs the tests do not have. Each becomes an Input layer with the same name,
// tops and include/exclude rules, shaped as the Data layer shapes them: batch x channels x crop x
// crop (image_size x image_size without a crop) for the data, batch for the label.
NetParameter data_to_input(const NetParameter& in, int channels, int image_size) {
  NetParameter out = in;
  out.clear_layer();
  for (const LayerParameter& lp : in.layer()) {
    if (lp.type() != "Data") {
      *out.add_layer() = lp;
      continue;
    }
    LayerParameter* ip = out.add_layer();
    ip->set_name(lp.name());
    ip->set_type("Input");
    *ip->mutable_top() = lp.top();
    *ip->mutable_include() = lp.include();
    *ip->mutable_exclude() = lp.exclude();
    const int64_t batch = lp.data_param().batch_size();
    const int64_t size =
        lp.transform_param().crop_size() ? lp.transform_param().crop_size() : image_size;
    BlobShape* data = ip->mutable_input_param()->add_shape();
    for (int64_t d : {batch, int64_t(channels), size, size}) data->add_dim(d);
    if (lp.top_size() > 1) ip->mutable_input_param()->add_shape()->add_dim(batch);
  }
  return out;
}

// Shapes and counts do not depend on initial values: constant (zero) fillers build the big nets
// in a fraction of the time random ones take.
NetParameter without_fillers(NetParameter p) {
  for (LayerParameter& lp : *p.mutable_layer()) {
    if (lp.has_convolution_param()) {
      lp.mutable_convolution_param()->clear_weight_filler();
      lp.mutable_convolution_param()->clear_bias_filler();
    }
    if (lp.has_inner_product_param()) {
      lp.mutable_inner_product_param()->clear_weight_filler();
      lp.mutable_inner_product_param()->clear_bias_filler();
    }
  }
  return p;
}

// Deploy nets end in a Softmax "prob" and hold no loss, so nothing would run backward. Here the
// batch becomes `batch` and prob becomes a SoftmaxWithLoss against a "label" Input.
NetParameter deploy_with_loss(const NetParameter& in, int64_t batch) {
  NetParameter out = in;
  bool found_prob = false;
  for (LayerParameter& lp : *out.mutable_layer()) {
    if (lp.type() == "Input") {
      for (BlobShape& s : *lp.mutable_input_param()->mutable_shape()) s.set_dim(0, batch);
    }
    if (lp.name() == "prob" && lp.type() == "Softmax") {
      lp.set_type("SoftmaxWithLoss");
      lp.add_bottom("label");
      lp.set_top(0, "loss");
      found_prob = true;
    }
  }
  EXPECT_TRUE(found_prob) << in.name() << " has no Softmax layer named prob";
  LayerParameter* label = out.add_layer();
  label->set_name("label");
  label->set_type("Input");
  label->add_top("label");
  label->mutable_input_param()->add_shape()->add_dim(batch);
  // A top must be produced before it is read: move the label up, next to the data.
  for (int i = out.layer_size() - 1; i > 1; --i) out.mutable_layer()->SwapElements(i, i - 1);
  return out;
}

bool is_batchnorm_blob(const Net<float>& net, const Tensor<float>* blob) {
  for (const auto& layer : net.layers()) {
    if (std::string(layer->type()) != "BatchNorm") continue;
    for (const auto& b : layer->blobs())
      if (b.get() == blob) return true;
  }
  return false;
}

// Learnable parameters as the published figures count them: BatchNorm's running mean, variance
// and averaging factor are statistics, not learned (lr_mult 0), and are left out.
int64_t learnable_count(const Net<float>& net) {
  int64_t n = 0;
  for (const auto* p : net.learnable_params())
    if (!is_batchnorm_blob(net, p)) n += p->count();
  return n;
}

ParamShapes param_shapes(const Net<float>& net) {
  ParamShapes out;
  for (int i = 0; i < net.num_layers(); ++i)
    for (const auto& b : net.layers()[i]->blobs()) out[net.layer_names()[i]].push_back(b->shape());
  return out;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Batches are those of the train_val's TRAIN and TEST phases and of the deploy net; parameter
// counts those of the train_val and of the deploy net (they differ where training adds heads).
struct ModelSpec {
  std::string dir;        // under models/
  std::string train_val;  // file name of the training net
  int image_size;         // input size where the Data layer does not crop
  int64_t crop;
  struct {
    int64_t train, test, deploy;
  } batch;
  std::vector<std::string> train_outputs, test_outputs;  // the nets' output blobs
  struct {
    int64_t train, deploy;
  } params;
  std::vector<std::pair<std::string, Shape>> deploy_shapes;
};

// Builds the train_val in both phases and the deploy net, and checks their shapes and counts.
void check_model(const ModelSpec& m) {
  SCOPED_TRACE(m.dir);
  const NetParameter train_val = without_fillers(data_to_input(
      load_net_param_text(model_path("models/" + m.dir + "/" + m.train_val)), 3, m.image_size));
  ParamShapes trained;
  {
    Net<float> net(train_val, TRAIN, Device::kCPU);
    EXPECT_EQ(net.blob_by_name("data")->shape(), (Shape{m.batch.train, 3, m.crop, m.crop}));
    EXPECT_EQ(net.blob_by_name("label")->shape(), (Shape{m.batch.train}));
    EXPECT_EQ(sorted(net.output_blob_names()), sorted(m.train_outputs));
    EXPECT_EQ(learnable_count(net), m.params.train);
    // Only BatchNorm's statistics are frozen (lr_mult and decay_mult 0, whatever the prototxt
    // says: the layer sets them, as Caffe's does); every other parameter learns.
    int frozen_but_updated = 0, learned_but_frozen = 0;
    for (size_t i = 0; i < net.learnable_params().size(); ++i) {
      if (is_batchnorm_blob(net, net.learnable_params()[i]))
        frozen_but_updated += net.params_lr()[i] != 0 || net.params_weight_decay()[i] != 0;
      else
        learned_but_frozen += net.params_lr()[i] <= 0;
    }
    EXPECT_EQ(frozen_but_updated, 0) << "BatchNorm statistics blobs the solver would update";
    EXPECT_EQ(learned_but_frozen, 0) << "parameters with lr_mult 0 outside BatchNorm";
    trained = param_shapes(net);
  }
  {
    Net<float> net(train_val, TEST, Device::kCPU);
    EXPECT_EQ(net.blob_by_name("data")->shape(), (Shape{m.batch.test, 3, m.crop, m.crop}));
    EXPECT_EQ(sorted(net.output_blob_names()), sorted(m.test_outputs));
    EXPECT_EQ(learnable_count(net), m.params.train);
  }
  Net<float> deploy(
      without_fillers(load_net_param_text(model_path("models/" + m.dir + "/deploy.prototxt"))),
      TEST, Device::kCPU);
  EXPECT_EQ(deploy.blob_by_name("data")->shape(), (Shape{m.batch.deploy, 3, m.crop, m.crop}));
  for (const auto& [blob, shape] : m.deploy_shapes)
    EXPECT_EQ(deploy.blob_by_name(blob)->shape(), shape) << blob;
  EXPECT_EQ(learnable_count(deploy), m.params.deploy);
  EXPECT_EQ(deploy.output_blob_names(), std::vector<std::string>{"prob"});
  // Weights trained with the train_val load into the deploy net by layer name.
  for (const auto& [layer, shapes] : param_shapes(deploy)) {
    ASSERT_TRUE(trained.count(layer)) << layer << " is not in " << m.train_val;
    EXPECT_EQ(trained.at(layer), shapes) << layer;
  }
}

// One forward and backward of the deploy net at batch 1 on random input: the loss and every
// gradient are finite, and the first convolution's weights get a non-zero gradient.
void smoke_deploy(const std::string& dir, const std::string& first_conv) {
  SCOPED_TRACE(dir);
  Net<float> net(
      deploy_with_loss(load_net_param_text(model_path("models/" + dir + "/deploy.prototxt")), 1),
      TEST, Device::kCPU);
  auto data = net.blob_by_name("data");
  ASSERT_EQ(data->shape(0), 1);
  data->set_data(test::random_vector<float>(size_t(data->count()), 42, -1.0, 1.0));
  net.blob_by_name("label")->set_data({7.0f});
  // Untrained BatchNorm statistics (all zero) would divide by sqrt(eps) in every layer; give
  // them the unit values a trained model's statistics are near: mean 0, variance 1, factor 1.
  for (const auto& layer : net.layers()) {
    if (std::string(layer->type()) != "BatchNorm") continue;
    ASSERT_EQ(layer->blobs().size(), 3u);
    layer->blobs()[0]->fill_data(0.0f);
    layer->blobs()[1]->fill_data(1.0f);
    layer->blobs()[2]->fill_data(1.0f);
  }
  prim::Handle h;
  const float loss = net.forward(h);
  EXPECT_TRUE(std::isfinite(loss)) << loss;
  EXPECT_GT(loss, 0.0f);
  net.backward(h);
  for (size_t i = 0; i < net.learnable_params().size(); ++i) {
    const std::vector<float> diff = net.learnable_params()[i]->diff_vector();
    size_t bad = 0;
    for (float d : diff) bad += !std::isfinite(d);
    EXPECT_EQ(bad, 0u) << "parameter blob " << i << " has non-finite gradients";
  }
  float max_abs = 0;
  for (float d : net.layer_by_name(first_conv)->blobs()[0]->diff_vector())
    max_abs = std::max(max_abs, std::abs(d));
  EXPECT_GT(max_abs, 0.0f) << first_conv << " weights got no gradient";
}

// ---- every file parses ------------------------------------------------------------------------

TEST(ReferenceModels, EveryPrototxtParses) {
  int nets = 0, solvers = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(model_path("models"))) {
    if (entry.path().extension() != ".prototxt") continue;
    const std::string path = entry.path().string();
    SCOPED_TRACE(path);
    if (entry.path().filename().string().find("solver") != std::string::npos) {
      const SolverParameter s = load_solver_param(path);
      ASSERT_TRUE(s.has_net());
      EXPECT_GT(load_net_param_text(model_path(s.net())).layer_size(), 0);
      ++solvers;
    } else {
      EXPECT_GT(load_net_param_text(path).layer_size(), 0);
      ++nets;
    }
  }
  // lenet_fashion 2, cifar10_quick 3, caffenet/alexnet/googlenet/vgg16/resnet50 2 each.
  EXPECT_GE(nets, 15);
  EXPECT_GE(solvers, 7);
}

// bench/models/<net>_train_b<batch>.prototxt, which bench/train_step and bench/peers time, is its
// reference train_val's TRAIN net with the Data layer replaced by an Input (batch x 3 x crop x
// crop) and the labels by DummyData: the same layers, in order, with the same parameters.
TEST(ReferenceModels, BenchNetsAreTheTrainValsTrainNets) {
  struct Bench {
    const char *net, *file;
    int64_t batch, crop;
  };
  for (const Bench& b : {Bench{"caffenet", "caffenet_train_b256", 256, 227},
                         Bench{"vgg16", "vgg16_train_b64", 64, 224},
                         Bench{"googlenet", "googlenet_train_b128", 128, 224},
                         Bench{"resnet50", "resnet50_train_b128", 128, 224}}) {
    SCOPED_TRACE(b.file);
    NetParameter train_val =
        load_net_param_text(model_path(std::string("models/") + b.net + "/train_val.prototxt"));
    train_val.mutable_state()->set_phase(TRAIN);
    NetParameter bench_file =
        load_net_param_text(model_path(std::string("bench/models/") + b.file + ".prototxt"));
    bench_file.mutable_state()->set_phase(TRAIN);
    const NetParameter bench = filter_net(bench_file);
    // Each layer as its file spells it, less where the file put it.
    const auto text = [](LayerParameter lp) {
      lp.clear_source_location();
      return lp.ShortDebugString();
    };
    const NetParameter train = filter_net(train_val);
    std::vector<std::string> want, got;
    for (const LayerParameter& lp : train.layer())
      if (lp.type() != "Data") want.push_back(text(lp));
    for (const LayerParameter& lp : bench.layer()) {
      if (lp.type() == "Input") {
        ASSERT_EQ(lp.input_param().shape_size(), 1);
        EXPECT_EQ(std::vector<int64_t>(lp.input_param().shape(0).dim().begin(),
                                       lp.input_param().shape(0).dim().end()),
                  (Shape{b.batch, 3, b.crop, b.crop}));
      } else if (lp.type() == "DummyData") {
        ASSERT_EQ(lp.dummy_data_param().shape_size(), 1);
        EXPECT_EQ(lp.dummy_data_param().shape(0).dim(0), b.batch);
      } else {
        got.push_back(text(lp));
      }
    }
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "layer " << i;
  }
}

TEST(ReferenceModels, SolversFollowTheirRecipes) {
  const SolverParameter cifar =
      load_solver_param(model_path("models/cifar10_quick/solver.prototxt"));
  EXPECT_EQ(cifar.net(), "models/cifar10_quick/train_test.prototxt");
  EXPECT_FLOAT_EQ(cifar.base_lr(), 0.001f);
  EXPECT_FLOAT_EQ(cifar.momentum(), 0.9f);
  EXPECT_FLOAT_EQ(cifar.weight_decay(), 0.004f);
  EXPECT_EQ(cifar.lr_policy(), "fixed");
  EXPECT_EQ(cifar.max_iter(), 4000);
  EXPECT_EQ(cifar.test_iter(0), 100);
  EXPECT_EQ(cifar.test_interval(), 500);
  for (const char* dir : {"caffenet", "alexnet"}) {
    SCOPED_TRACE(dir);
    const SolverParameter s =
        load_solver_param(model_path(std::string("models/") + dir + "/solver.prototxt"));
    EXPECT_FLOAT_EQ(s.base_lr(), 0.01f);
    EXPECT_EQ(s.lr_policy(), "step");
    EXPECT_EQ(s.stepsize(), 100000);
    EXPECT_FLOAT_EQ(s.gamma(), 0.1f);
    EXPECT_FLOAT_EQ(s.momentum(), 0.9f);
    EXPECT_FLOAT_EQ(s.weight_decay(), 0.0005f);
    EXPECT_EQ(s.max_iter(), 450000);
    EXPECT_EQ(s.test_iter(0), 1000);
    EXPECT_EQ(s.test_interval(), 1000);
  }
  const SolverParameter g = load_solver_param(model_path("models/googlenet/solver.prototxt"));
  EXPECT_EQ(g.lr_policy(), "poly");
  EXPECT_FLOAT_EQ(g.power(), 0.5f);
  EXPECT_FALSE(g.test_initialization());
}

// ---- shapes and parameter counts ----------------------------------------------------------------

TEST(ReferenceModels, Cifar10Quick) {
  // 3*32*25+32 + 32*32*25+32 + 32*64*25+64 + 64*4*4*64+64 + 64*10+10
  check_model({.dir = "cifar10_quick",
               .train_val = "train_test.prototxt",
               .image_size = 32,
               .crop = 32,
               .batch = {100, 100, 1},
               .train_outputs = {"loss"},
               .test_outputs = {"accuracy", "loss"},
               .params = {145578, 145578},
               .deploy_shapes = {{"conv1", {1, 32, 32, 32}},
                                 {"pool1", {1, 32, 16, 16}},
                                 {"pool2", {1, 32, 8, 8}},
                                 {"pool3", {1, 64, 4, 4}},
                                 {"ip1", {1, 64}},
                                 {"ip2", {1, 10}},
                                 {"prob", {1, 10}}}});
}

TEST(ReferenceModels, Cifar10QuickBenchTrainsAtBatch100) {
  Net<float> net(load_net_param_text(model_path("models/cifar10_quick/bench_train.prototxt")),
                 TRAIN, Device::kCPU);
  EXPECT_EQ(net.blob_by_name("data")->shape(), (Shape{100, 3, 32, 32}));
  EXPECT_EQ(net.blob_by_name("ip2")->shape(), (Shape{100, 10}));
  EXPECT_EQ(net.output_blob_names(), std::vector<std::string>{"loss"});
  EXPECT_EQ(learnable_count(net), 145578);
  auto data = net.blob_by_name("data");
  data->set_data(test::random_vector<float>(size_t(data->count()), 7, -100.0, 100.0));
  prim::Handle h;
  // conv1's weights (std 1e-4) make the logits nearly equal at initialization: loss ~ ln 10.
  EXPECT_NEAR(net.forward(h), std::log(10.0), 0.05);
  net.backward(h);
  float max_abs = 0;
  for (float d : net.layer_by_name("ip2")->blobs()[1]->diff_vector())
    max_abs = std::max(max_abs, std::abs(d));
  EXPECT_GT(max_abs, 0.01f);
}

TEST(ReferenceModels, CaffeNet) {
  check_model({.dir = "caffenet",
               .train_val = "train_val.prototxt",
               .image_size = 256,
               .crop = 227,
               .batch = {256, 50, 10},
               .train_outputs = {"loss"},
               .test_outputs = {"accuracy", "loss"},
               .params = {60965224, 60965224},
               .deploy_shapes = {{"pool1", {10, 96, 27, 27}},
                                 {"norm2", {10, 256, 13, 13}},
                                 {"pool5", {10, 256, 6, 6}},
                                 {"fc8", {10, 1000}}}});
}

TEST(ReferenceModels, AlexNet) {
  // Normalization comes before pooling: norm1 keeps conv1's 55x55.
  check_model({.dir = "alexnet",
               .train_val = "train_val.prototxt",
               .image_size = 256,
               .crop = 227,
               .batch = {256, 50, 10},
               .train_outputs = {"loss"},
               .test_outputs = {"accuracy", "loss"},
               .params = {60965224, 60965224},
               .deploy_shapes = {{"conv1", {10, 96, 55, 55}},
                                 {"norm1", {10, 96, 55, 55}},
                                 {"pool1", {10, 96, 27, 27}},
                                 {"norm2", {10, 256, 27, 27}},
                                 {"pool2", {10, 256, 13, 13}},
                                 {"pool5", {10, 256, 6, 6}},
                                 {"fc8", {10, 1000}}}});
}

TEST(ReferenceModels, GoogLeNet) {
  // Deploy, counted by hand: stem 9,408+64 + 4,096+64 + 110,592+192; the nine inception modules
  // (1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj, with biases) 5,983,802 in all; classifier
  // 1,024,000+1,000. Training adds two auxiliary heads of 128*C+128 + 2048*1024+1024 +
  // 1024*1000+1000 with C = 512 and 528.
  check_model(
      {.dir = "googlenet",
       .train_val = "train_val.prototxt",
       .image_size = 256,
       .crop = 224,
       .batch = {32, 50, 10},
       .train_outputs = {"loss1/loss", "loss2/loss", "loss3/loss3"},
       .test_outputs = {"loss1/loss", "loss1/top-1", "loss1/top-5", "loss2/loss", "loss2/top-1",
                        "loss2/top-5", "loss3/loss3", "loss3/top-1", "loss3/top-5"},
       .params = {13378280, 6998552},
       .deploy_shapes = {{"conv1/7x7_s2", {10, 64, 112, 112}},
                         {"pool2/3x3_s2", {10, 192, 28, 28}},
                         {"inception_3a/output", {10, 256, 28, 28}},
                         {"inception_3b/output", {10, 480, 28, 28}},
                         {"inception_4a/output", {10, 512, 14, 14}},
                         {"inception_4e/output", {10, 832, 14, 14}},
                         {"inception_5b/output", {10, 1024, 7, 7}},
                         {"pool5/7x7_s1", {10, 1024, 1, 1}},
                         {"loss3/classifier", {10, 1000}}}});
  const NetParameter tv =
      data_to_input(load_net_param_text(model_path("models/googlenet/train_val.prototxt")), 3, 256);
  Net<float> net(tv, TRAIN, Device::kCPU);
  EXPECT_EQ(net.blob_by_name("loss1/ave_pool")->shape(), (Shape{32, 512, 4, 4}));
  EXPECT_EQ(net.blob_by_name("loss2/ave_pool")->shape(), (Shape{32, 528, 4, 4}));
  std::map<std::string, float> weights;
  for (size_t i = 0; i < net.output_blob_names().size(); ++i)
    weights[net.output_blob_names()[i]] = net.output_loss_weights()[i];
  EXPECT_EQ(weights, (std::map<std::string, float>{
                         {"loss1/loss", 0.3f}, {"loss2/loss", 0.3f}, {"loss3/loss3", 1.0f}}));
}

TEST(ReferenceModels, Vgg16) {
  check_model({.dir = "vgg16",
               .train_val = "train_val.prototxt",
               .image_size = 256,
               .crop = 224,
               .batch = {64, 50, 10},
               .train_outputs = {"loss"},
               .test_outputs = {"accuracy", "accuracy_top5", "loss"},
               .params = {138357544, 138357544},
               .deploy_shapes = {{"conv1_2", {10, 64, 224, 224}},
                                 {"pool1", {10, 64, 112, 112}},
                                 {"pool3", {10, 256, 28, 28}},
                                 {"conv5_3", {10, 512, 14, 14}},
                                 {"pool5", {10, 512, 7, 7}},
                                 {"fc6", {10, 4096}},
                                 {"fc8", {10, 1000}}}});
}

TEST(ReferenceModels, ResNet50) {
  check_model({.dir = "resnet50",
               .train_val = "train_val.prototxt",
               .image_size = 256,
               .crop = 224,
               .batch = {32, 50, 1},
               .train_outputs = {"loss"},
               .test_outputs = {"accuracy", "accuracy_top5", "loss"},
               .params = {25557032, 25557032},
               .deploy_shapes = {{"conv1", {1, 64, 112, 112}},
                                 {"pool1", {1, 64, 56, 56}},
                                 {"res2c", {1, 256, 56, 56}},
                                 {"res3a_branch2a", {1, 128, 28, 28}},
                                 {"res3d", {1, 512, 28, 28}},
                                 {"res4f", {1, 1024, 14, 14}},
                                 {"res5c", {1, 2048, 7, 7}},
                                 {"pool5", {1, 2048, 1, 1}},
                                 {"fc1000", {1, 1000}}}});
  // 53 convolutions, each followed by BatchNorm and Scale; 16 residual sums.
  Net<float> net(load_net_param_text(model_path("models/resnet50/deploy.prototxt")), TEST,
                 Device::kCPU);
  std::map<std::string, int> types;
  for (const auto& layer : net.layers()) ++types[layer->type()];
  EXPECT_EQ(types["Convolution"], 53);
  EXPECT_EQ(types["BatchNorm"], 53);
  EXPECT_EQ(types["Scale"], 53);
  EXPECT_EQ(types["Eltwise"], 16);
}

// ---- one forward + backward of each deploy net
// ---------------------------------------------------

TEST(ReferenceModelsSmoke, Cifar10Quick) { smoke_deploy("cifar10_quick", "conv1"); }
TEST(ReferenceModelsSmoke, CaffeNet) { smoke_deploy("caffenet", "conv1"); }
TEST(ReferenceModelsSmoke, AlexNet) { smoke_deploy("alexnet", "conv1"); }
TEST(ReferenceModelsSmoke, GoogLeNet) { smoke_deploy("googlenet", "conv1/7x7_s2"); }
TEST(ReferenceModelsSmoke, Vgg16) { smoke_deploy("vgg16", "conv1_1"); }
TEST(ReferenceModelsSmoke, ResNet50) { smoke_deploy("resnet50", "conv1"); }

}  // namespace
}  // namespace crema
