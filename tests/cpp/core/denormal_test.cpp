// Denormal results are flushed to zero inside kiln's ops, as in TensorFlow
// (its denormal_test): eagerly, in a function, under jit_compile and on the
// pool's threads; the caller's own arithmetic keeps IEEE denormals; with
// config().flush_denormals off they are kept everywhere.
#include "core/denormal.h"

#include <limits>

#include "jit/jit_test_util.h"
#include "kiln/function.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln {
namespace {

// Arithmetic on this thread outside kiln: a denormal survives.
template <typename T>
bool caller_keeps_denormals() {
  volatile T tiny = std::numeric_limits<T>::min();
  volatile T x = tiny / T(16);
  return x != T(0) && x * T(16) == tiny;
}

// 0.1 * the smallest normal value (a denormal in IEEE arithmetic) over
// `n` elements through `f`; true when every result is 0.
template <typename T>
bool all_flushed(const std::function<Tensor(const Tensor&)>& f, int64_t n) {
  const T tiny = std::numeric_limits<T>::min();
  const Tensor out = f(fill({n}, Tensor(tiny)));
  const std::vector<T> v = out.to_vector<T>();
  for (T x : v)
    if (x != T(0)) return false;
  return !v.empty();
}

template <typename T>
void check_dtype() {
  SCOPED_TRACE(dtype_name(dtype_v<T>));
  auto scale = [](const std::vector<Value>& a) { return Value(a[0].tensor() * T(0.1)); };
  Function graph = jit::testing::make(scale, false), jitted = jit::testing::make(scale, true);
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> modes = {
      {"eager", [](const Tensor& x) { return x * T(0.1); }},
      {"function", [&](const Tensor& x) { return graph({Value(x)}).tensor(); }},
      {"jit", [&](const Tensor& x) { return jitted({Value(x)}).tensor(); }}};
  // One element runs on the caller's thread; 2^20 are split over the pool.
  for (int64_t n : {int64_t{1}, int64_t{1} << 20}) {
    for (const auto& [name, f] : modes) {
      SCOPED_TRACE(::testing::Message() << name << " n=" << n);
      EXPECT_TRUE(all_flushed<T>(f, n));
      EXPECT_TRUE(caller_keeps_denormals<T>());  // the mode does not leak out
      {
        testing::ScopedFlushDenormals keep(false);
        const Tensor out = f(fill({n}, Tensor(std::numeric_limits<T>::min())));
        const std::vector<T> v = out.to_vector<T>();
        EXPECT_GT(v.front(), T(0));
        EXPECT_GT(v.back(), T(0));  // the pool's last chunk: kept too
      }
      EXPECT_TRUE(all_flushed<T>(f, n));  // and flushed again on the workers
    }
  }
}

TEST(Denormals, OpsFlushResultsAndTheCallerKeepsItsMode) {
  ASSERT_TRUE(config().flush_denormals);  // the default
  if (detail::kFlushBits == 0) GTEST_SKIP() << "no flush-to-zero control on this CPU";
  check_dtype<float>();
  check_dtype<double>();
}

// Only results are flushed: a denormal input is read as itself (x86 FTZ
// without DAZ), so ops whose result is normal stay exact.
TEST(Denormals, DenormalInputsAreReadAsThemselves) {
  if (detail::kFlushBits != 0x8000) GTEST_SKIP() << "x86 only (Arm's FZ flushes inputs too)";
  const float d = std::numeric_limits<float>::denorm_min();
  const Tensor x({d, -d});
  EXPECT_EQ(sign(x).to_vector<float>(), (std::vector<float>{1.f, -1.f}));
  EXPECT_EQ(ceil(x).to_vector<float>(), (std::vector<float>{1.f, -0.f}));
  EXPECT_GT((x * 1e30f).to_vector<float>()[0], 0.f);  // 1.4e-15
  EXPECT_NEAR(log(x).to_vector<float>()[0], -103.279f, 1e-3f);
}

// The scope restores what it found, and nested scopes leave the outer one's mode.
TEST(Denormals, ScopesRestoreTheModeTheyFound) {
  const uint64_t before = detail::fp_mode();
  {
    detail::ScopedFlushDenormals outer;
    const uint64_t inside = detail::fp_mode();
    EXPECT_EQ(inside & detail::kFlushBits, detail::kFlushBits);
    {
      detail::ScopedFlushDenormals inner;
      EXPECT_EQ(detail::fp_mode(), inside);
    }
    EXPECT_EQ(detail::fp_mode(), inside);
  }
  EXPECT_EQ(detail::fp_mode(), before);
}

}  // namespace
}  // namespace kiln
