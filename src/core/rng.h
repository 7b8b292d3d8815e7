// The framework's random generator, as Caffe's: one generator per thread, seeded from
// SolverParameter.random_seed (or from entropy when no seed is given), used by fillers and data
// shuffling. Dropout draws from the primitives' counter-based generator instead (Handle seed).
#pragma once

#include <cstdint>
#include <random>

namespace crema {

using Rng = std::mt19937_64;

// The calling thread's generator.
Rng& thread_rng();
// Reseeds the calling thread's generator; a negative seed draws one from std::random_device.
void seed_thread_rng(int64_t seed);

}  // namespace crema
