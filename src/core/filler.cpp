// Filler implementations.
#include "core/filler.h"

#include <cmath>
#include <random>
#include <vector>

#include "core/errors.h"
#include "core/rng.h"

namespace crema {
namespace {

double variance_fan(const FillerParameter& p, int64_t count, const std::vector<int64_t>& shape) {
  CREMA_REQUIRE(!shape.empty() && shape[0] > 0, "filler ", p.type(),
                " needs a tensor with a non-empty first axis");
  const double fan_in = double(count) / double(shape[0]);
  const double fan_out = shape.size() > 1 && shape[1] > 0 ? double(count) / double(shape[1])
                                                          : double(count);
  switch (p.variance_norm()) {
    case FillerParameter::FAN_OUT:
      return fan_out;
    case FillerParameter::AVERAGE:
      return (fan_in + fan_out) / 2.0;
    default:
      return fan_in;
  }
}

}  // namespace

template <typename Dtype>
void fill_tensor(const FillerParameter& p, Tensor<Dtype>* tensor) {
  const int64_t count = tensor->count();
  const std::vector<int64_t>& shape = tensor->shape();
  std::vector<Dtype> v(count);
  Rng& rng = thread_rng();
  const std::string& type = p.type();
  if (type == "constant") {
    std::fill(v.begin(), v.end(), Dtype(p.value()));
  } else if (type == "uniform") {
    CREMA_REQUIRE(p.min() <= p.max(), "uniform filler: min ", p.min(), " > max ", p.max());
    std::uniform_real_distribution<double> d(p.min(), p.max());
    for (auto& x : v) x = Dtype(d(rng));
  } else if (type == "gaussian") {
    CREMA_REQUIRE(p.std() >= 0, "gaussian filler: negative std ", p.std());
    std::normal_distribution<double> d(p.mean(), p.std());
    for (auto& x : v) x = Dtype(d(rng));
    if (p.sparse() >= 0) {
      CREMA_REQUIRE(!shape.empty() && shape[0] > 0, "sparse gaussian filler needs shape[0] > 0");
      const double keep = std::min(1.0, double(p.sparse()) / double(shape[0]));
      std::bernoulli_distribution b(keep);
      for (auto& x : v) x = b(rng) ? x : Dtype(0);
    }
  } else if (type == "positive_unitball") {
    std::uniform_real_distribution<double> d(0.0, 1.0);
    for (auto& x : v) x = Dtype(d(rng));
    const int64_t rows = shape.empty() ? 1 : shape[0];
    const int64_t dim = rows > 0 ? count / rows : 0;
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t i = 0; i < dim; ++i) sum += v[r * dim + i];
      for (int64_t i = 0; i < dim; ++i) v[r * dim + i] = Dtype(v[r * dim + i] / sum);
    }
  } else if (type == "xavier") {
    const double a = std::sqrt(3.0 / variance_fan(p, count, shape));
    std::uniform_real_distribution<double> d(-a, a);
    for (auto& x : v) x = Dtype(d(rng));
  } else if (type == "msra") {
    std::normal_distribution<double> d(0.0, std::sqrt(2.0 / variance_fan(p, count, shape)));
    for (auto& x : v) x = Dtype(d(rng));
  } else if (type == "bilinear") {
    CREMA_REQUIRE(shape.size() == 4 && shape[2] == shape[3],
                  "bilinear filler needs a 4-d tensor with a square kernel");
    const int64_t k = shape[3];
    const double f = std::ceil(k / 2.0);
    const double c = (2 * f - 1 - std::fmod(f, 2.0)) / (2.0 * f);
    for (int64_t i = 0; i < count; ++i) {
      const double x = double(i % k), y = double((i / k) % k);
      v[i] = Dtype((1 - std::fabs(x / f - c)) * (1 - std::fabs(y / f - c)));
    }
  } else {
    fail("unknown filler type \"", type,
         "\" (known: constant, uniform, gaussian, positive_unitball, xavier, msra, bilinear)");
  }
  tensor->set_data(v);
}

template void fill_tensor<float>(const FillerParameter&, Tensor<float>*);
template void fill_tensor<double>(const FillerParameter&, Tensor<double>*);

}  // namespace crema
