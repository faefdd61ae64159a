// float16 / bfloat16: the conversions against references (GCC's _Float16 and
// a nearest-of-two-neighbours bfloat16), and ops computing them in float32:
// eagerly, traced, gradients, casts, printing and the mixing error.
#include <cmath>
#include <limits>
#include <random>

#include "kiln/function.h"
#include "kiln/gradient_tape.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;

uint32_t bits_of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

std::vector<float> probe_floats() {
  std::vector<float> v = {0.f,
                          -0.f,
                          1.f,
                          -1.f,
                          65504.f,
                          65520.f,
                          65519.99f,
                          1e9f,
                          5.9604645e-8f,
                          2.9802322e-8f,
                          2.9802326e-8f,
                          6.1035156e-5f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::denorm_min(),
                          3.14159265f,
                          1.0009765625f,
                          1.00048828125f,
                          1.00146484375f};
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    float f;
    const uint32_t x = rng();
    std::memcpy(&f, &x, 4);
    if (!std::isnan(f)) v.push_back(f);
  }
  return v;
}

TEST(Half, EveryHalfRoundTripsAndFloatsRoundLikeFloat16) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const Half h{static_cast<uint16_t>(b)};
    const float f = to_float(h);
    _Float16 ref;
    std::memcpy(&ref, &h.bits, 2);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(ref)));
      EXPECT_TRUE(std::isnan(to_float(to_half(f))));
      continue;
    }
    ASSERT_EQ(bits_of(f), bits_of(static_cast<float>(ref))) << b;
    ASSERT_EQ(to_half(f).bits, b) << b;
  }
  for (float f : probe_floats()) {
    const _Float16 ref = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &ref, 2);
    ASSERT_EQ(to_half(f).bits, want) << f;
  }
  EXPECT_TRUE(std::isnan(to_float(to_half(std::nanf("")))));
}

TEST(Half, BFloat16RoundsToTheNearestOfItsNeighbours) {
  for (float f : probe_floats()) {
    const uint32_t x = bits_of(f);
    const uint32_t lo = x & 0xffff0000u;
    const BFloat16 got = to_bfloat16(f);
    if (std::isinf(f) || x == lo) {
      ASSERT_EQ(got.bits, lo >> 16) << f;
      continue;
    }
    const double a = to_float(BFloat16{static_cast<uint16_t>(lo >> 16)});
    const uint32_t hi = lo + 0x10000u;
    double b = to_float(BFloat16{static_cast<uint16_t>(hi >> 16)});
    if (std::isinf(b)) b = std::copysign(std::ldexp(1.0, 128), f);  // IEEE: as if unbounded
    const double da = std::fabs(f - a), db = std::fabs(b - f);
    const uint32_t want = da < db ? lo : db < da ? hi : ((lo >> 16) & 1 ? hi : lo);
    ASSERT_EQ(got.bits, want >> 16) << f;
  }
  EXPECT_TRUE(std::isnan(to_float(to_bfloat16(std::nanf("")))));
}

Tensor halves(const std::vector<float>& v, DType dt) {
  return cast(Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())}), dt);
}

std::vector<float> floats(const Tensor& t) {
  const Tensor f = cast(t, DType::kFloat32);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.num_elements());
}

TEST(Half, OpsComputeInFloat32AndRoundOnce) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor a = halves({1.5f, -2.25f, 1000.f}, dt), b = halves({0.1f, 3.f, 0.3f}, dt);
    const Tensor sum = a + b;
    ASSERT_EQ(sum.dtype(), dt);
    const std::vector<float> fa = floats(a), fb = floats(b), got = floats(sum);
    for (size_t i = 0; i < 3; ++i) {
      const float want = dt == DType::kFloat16 ? to_float(to_half(fa[i] + fb[i]))
                                               : to_float(to_bfloat16(fa[i] + fb[i]));
      EXPECT_EQ(got[i], want) << i;
    }
    EXPECT_EQ(reduce_sum(a).dtype(), dt);
    EXPECT_EQ(floats(reduce_max(a))[0], 1000.f);
    EXPECT_EQ(argmax(a).dtype(), DType::kInt64);  // integer outputs stay as they are
    EXPECT_EQ(matmul(reshape(a, {1, 3}), reshape(b, {3, 1})).dtype(), dt);
    EXPECT_EQ(exp(a).dtype(), dt);
    EXPECT_EQ(reshape(a, {3, 1}).dtype(), dt);  // data movement keeps the bits
    EXPECT_EQ(floats(concat({a, b}, 0)).size(), 6u);
    expect_error(
        [&] {
          a + Tensor({1.f, 2.f, 3.f});
        },
        Code::kInvalidArgument, {"dtype mismatch", std::string(dtype_name(dt))});
  }
  expect_error([] { halves({1.f}, DType::kFloat16) + halves({1.f}, DType::kBFloat16); },
               Code::kInvalidArgument, {"dtype mismatch"});
}

TEST(Half, CastsPrintingAndScalars) {
  const Tensor h = cast(Tensor({1.f, 65504.f, 70000.f, -0.5f}), DType::kFloat16);
  EXPECT_EQ(floats(h), (std::vector<float>{1.f, 65504.f, INFINITY, -0.5f}));
  EXPECT_EQ(floats(cast(cast(h, DType::kInt32), DType::kFloat32))[1], 65504.f);
  EXPECT_EQ(cast(Tensor({2.5f, -1.f}), DType::kBFloat16).to_string(), "[2.5 -1]");
  EXPECT_EQ(floats(Tensor(Scalar(0.1), DType::kFloat16))[0], to_float(to_half(0.1f)));
  EXPECT_EQ(floats(cast(cast(Tensor({true, false}), DType::kBFloat16), DType::kFloat32)),
            (std::vector<float>{1.f, 0.f}));
  EXPECT_EQ(cast(h, DType::kBool).data<bool>()[0], true);
  expect_error([] { cast(Tensor("a"), DType::kFloat16); }, Code::kUnimplemented, {"string"});
}

TEST(Half, GradientsTracedAndEager) {
  for (bool traced : {false, true}) {
    SCOPED_TRACE(traced ? "traced" : "eager");
    auto body = [](const Tensor& x) {
      GradientTape tape;
      tape.watch(x);
      const Tensor y = reduce_sum(x * x);
      return std::vector<Tensor>{y, tape.gradient(y, x)};
    };
    const Tensor x = halves({1.f, -2.f, 0.5f}, DType::kFloat16);
    std::vector<Tensor> r;
    if (traced) {
      Function fn([&](const std::vector<Value>& a) {
        const auto out = body(a[0].tensor());
        return Value::tuple({Value(out[0]), Value(out[1])});
      });
      const Value v = fn({x});
      r = {v.items()[0].tensor(), v.items()[1].tensor()};
    } else {
      r = body(x);
    }
    EXPECT_EQ(r[1].dtype(), DType::kFloat16);
    EXPECT_EQ(floats(r[0])[0], 5.25f);
    EXPECT_EQ(floats(r[1]), (std::vector<float>{2.f, -4.f, 1.f}));
  }
}

}  // namespace
}  // namespace kiln
