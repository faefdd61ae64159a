// CPU kernels for RandomUniform and RandomNormal (Philox4x32-10), and the
// process-wide seed state behind set_random_seed.
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <utility>

#include "kernel_util.h"
#include "kiln/ops/creation.h"
#include "philox.h"

namespace kiln::cpu {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// TensorFlow's global seed when only an op seed is given (DEFAULT_GRAPH_SEED).
constexpr int64_t kDefaultGlobalSeed = 87654321;
constexpr uint64_t kUnseededStream = uint64_t{1} << 63;

struct RandomState {
  std::mutex mu;
  bool global_set = false;
  int64_t global_seed = 0;
  uint64_t process_key = 0;     // nondeterministic, for unseeded ops without a global seed
  uint64_t unseeded_calls = 0;  // stream ids handed to unseeded calls
  std::map<std::pair<int, int64_t>, uint64_t> next_block;  // (op, op seed) -> counter

  RandomState() {
    std::random_device rd;
    process_key = (uint64_t{rd()} << 32) ^ rd();
  }
};

RandomState& state() {
  static RandomState* s = new RandomState;  // never destroyed: usable at exit
  return *s;
}

}  // namespace

PhiloxStream reserve_philox_stream(OpId op, int64_t seed, uint64_t num_blocks) {
  RandomState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  uint64_t base;
  PhiloxStream out;
  if (seed >= 0) {
    base = static_cast<uint64_t>(s.global_set ? s.global_seed : kDefaultGlobalSeed);
    uint64_t& next = s.next_block[{static_cast<int>(op), seed}];
    out.first_block = next;
    next += num_blocks;
    out.stream = static_cast<uint64_t>(seed);
  } else {
    base = s.global_set ? static_cast<uint64_t>(s.global_seed) : s.process_key;
    out.stream = kUnseededStream | s.unseeded_calls++;
  }
  // Different ops get unrelated keys, so uniform and normal draws with the
  // same seed are independent.
  const uint64_t key = splitmix64(splitmix64(base) + static_cast<uint64_t>(op) + 1);
  out.key = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
  return out;
}

}  // namespace kiln::cpu

namespace kiln {
void set_random_seed(int64_t seed) {
  auto& s = cpu::state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.global_set = true;
  s.global_seed = seed;
  s.unseeded_calls = 0;
  s.next_block.clear();
}
}  // namespace kiln

namespace kiln::cpu {
namespace {

constexpr float kTwo24Inv = 1.0f / 16777216.0f;         // 2^-24
constexpr double kTwo53Inv = 1.0 / 9007199254740992.0;  // 2^-53
constexpr double kTwoPi = 6.283185307179586476925286766559;

inline float u24(uint32_t w) {
  return static_cast<float>(w >> 8) * kTwo24Inv;
}  // [0, 1)
inline double u53(uint32_t hi, uint32_t lo) {  // [0, 1)
  return static_cast<double>(((uint64_t{hi} << 32) | lo) >> 11) * kTwo53Inv;
}
inline uint64_t u64(uint32_t hi, uint32_t lo) {
  return (uint64_t{hi} << 32) | lo;
}

// Runs gen(block_words, first_element, count) over the blocks of an output of
// n elements with `per_block` elements per Philox block.
template <typename Gen>
void generate(KernelContext& c, int64_t n, int per_block, Gen gen) {
  if (n == 0) return;
  const uint64_t blocks = static_cast<uint64_t>((n + per_block - 1) / per_block);
  const PhiloxStream stream = reserve_philox_stream(c.op().id, c.attr_int("seed"), blocks);
  const int64_t grain = std::max<int64_t>(1, config().parallel_grain / per_block);
  parallel_for(static_cast<int64_t>(blocks), grain, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const PhiloxCounter w = stream.block(static_cast<uint64_t>(j));
      const int64_t first = j * per_block;
      gen(w, first, static_cast<int>(std::min<int64_t>(per_block, n - first)));
    }
  });
}

// lo + (hi - lo) * u kept inside [lo, hi) (rounding can reach hi).
template <typename T>
inline T scale_uniform(T lo, T hi, T span, T u) {
  T v = std::isfinite(span) ? lo + span * u : lo * (1 - u) + hi * u;
  if (v >= hi && hi > lo) v = std::nextafter(hi, lo);
  return v;
}

void uniform_kernel(KernelContext& c) {
  Tensor& out = c.allocate_output(0);
  const int64_t n = out.num_elements();
  switch (out.dtype()) {
    case DType::kFloat32: {
      const float lo = c.input(1).item<float>(), hi = c.input(2).item<float>();
      const float span = hi - lo;
      float* p = out.mutable_data<float>();
      generate(c, n, 4, [&](const PhiloxCounter& w, int64_t i, int k) {
        for (int q = 0; q < k; ++q) p[i + q] = scale_uniform(lo, hi, span, u24(w[q]));
      });
      break;
    }
    case DType::kFloat64: {
      const double lo = c.input(1).item<double>(), hi = c.input(2).item<double>();
      const double span = hi - lo;
      double* p = out.mutable_data<double>();
      generate(c, n, 2, [&](const PhiloxCounter& w, int64_t i, int k) {
        for (int q = 0; q < k; ++q)
          p[i + q] = scale_uniform(lo, hi, span, u53(w[2 * q], w[2 * q + 1]));
      });
      break;
    }
    case DType::kInt32:
    case DType::kInt64: {
      const bool is32 = out.dtype() == DType::kInt32;
      const int64_t lo = is32 ? c.input(1).item<int32_t>() : c.input(1).item<int64_t>();
      const int64_t hi = is32 ? c.input(2).item<int32_t>() : c.input(2).item<int64_t>();
      // Checked by inference when the values are known; repeated here for
      // traced calls whose bounds arrive at run time.
      if (!(lo < hi))
        throw InvalidArgumentError(str_cat(c.op().type_name,
                                           ": integer uniform values need minval < maxval, got "
                                           "minval = ",
                                           lo, ", maxval = ", hi));
      const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
      // Multiply-shift maps 64 random bits onto [0, span) (bias < span / 2^64).
      auto draw = [span, lo](uint32_t a, uint32_t b) {
        const uint64_t off =
            static_cast<uint64_t>((static_cast<unsigned __int128>(u64(a, b)) * span) >> 64);
        return static_cast<uint64_t>(lo) + off;
      };
      if (is32) {
        int32_t* p = out.mutable_data<int32_t>();
        generate(c, n, 2, [&](const PhiloxCounter& w, int64_t i, int k) {
          for (int q = 0; q < k; ++q)
            p[i + q] = static_cast<int32_t>(static_cast<int64_t>(draw(w[2 * q], w[2 * q + 1])));
        });
      } else {
        int64_t* p = out.mutable_data<int64_t>();
        generate(c, n, 2, [&](const PhiloxCounter& w, int64_t i, int k) {
          for (int q = 0; q < k; ++q) p[i + q] = static_cast<int64_t>(draw(w[2 * q], w[2 * q + 1]));
        });
      }
      break;
    }
    default:
      throw InternalError(
          str_cat(c.op().type_name, ": unexpected dtype ", dtype_name(out.dtype())));
  }
}

// Box-Muller: two uniforms, u1 in (0, 1] and u2 in [0, 1), give two normals.
template <typename T>
inline void box_muller(T u1, T u2, T& z0, T& z1) {
  const T r = std::sqrt(T(-2) * std::log(u1));
  const T theta = static_cast<T>(kTwoPi) * u2;
  z0 = r * std::cos(theta);
  z1 = r * std::sin(theta);
}

void normal_kernel(KernelContext& c) {
  Tensor& out = c.allocate_output(0);
  const int64_t n = out.num_elements();
  if (out.dtype() == DType::kFloat32) {
    const float mean = c.input(1).item<float>(), sd = c.input(2).item<float>();
    float* p = out.mutable_data<float>();
    generate(c, n, 4, [&](const PhiloxCounter& w, int64_t i, int k) {
      float z[4];
      box_muller(static_cast<float>((w[0] >> 8) + 1) * kTwo24Inv, u24(w[1]), z[0], z[1]);
      box_muller(static_cast<float>((w[2] >> 8) + 1) * kTwo24Inv, u24(w[3]), z[2], z[3]);
      for (int q = 0; q < k; ++q) p[i + q] = mean + sd * z[q];
    });
  } else if (out.dtype() == DType::kFloat64) {
    const double mean = c.input(1).item<double>(), sd = c.input(2).item<double>();
    double* p = out.mutable_data<double>();
    generate(c, n, 2, [&](const PhiloxCounter& w, int64_t i, int k) {
      double z[2];
      const double u1 = static_cast<double>((u64(w[0], w[1]) >> 11) + 1) * kTwo53Inv;
      box_muller(u1, u53(w[2], w[3]), z[0], z[1]);
      for (int q = 0; q < k; ++q) p[i + q] = mean + sd * z[q];
    });
  } else {
    throw InternalError(str_cat(c.op().type_name, ": unexpected dtype ", dtype_name(out.dtype())));
  }
}

}  // namespace

void bind_random_kernels(OpTableBuilder& t) {
  t.kernel(OpId::RandomUniform, uniform_kernel);
  t.kernel(OpId::RandomNormal, normal_kernel);
}

}  // namespace kiln::cpu
