// complex64/complex128: construction, parts, modulus, conjugate, arithmetic
// and comparisons against std::complex, eagerly and traced; casts and errors.
#include <complex>

#include "kiln/function.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;

template <typename C>
std::vector<C> values(const Tensor& t) {
  return std::vector<C>(t.data<C>(), t.data<C>() + t.num_elements());
}

template <typename R>
void check_dtype(DType real_dt, DType complex_dt) {
  using C = std::complex<R>;
  const std::vector<R> re = {1.5, -2, 0, 3e30}, im = {0.5, 4, -1, 4e30};
  const Tensor z = complex(Tensor::from_vector(re, Shape{4}), Tensor::from_vector(im, Shape{4}));
  ASSERT_EQ(z.dtype(), complex_dt);
  const Tensor w = complex(Tensor::from_vector(std::vector<R>{2, 1, -1, 1}, Shape{4}),
                           Tensor::from_vector(std::vector<R>{-1, 1, 0.5, 0}, Shape{4}));
  const std::vector<C> a = values<C>(z), b = values<C>(w);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(a[i], C(re[i], im[i]));
  const std::vector<C> sum = values<C>(z + w), prod = values<C>(z * w), quo = values<C>(z / w),
                       neg = values<C>(-z), cj = values<C>(conj(z));
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(sum[i], a[i] + b[i]);
    EXPECT_EQ(prod[i], a[i] * b[i]);
    EXPECT_EQ(quo[i], a[i] / b[i]);
    EXPECT_EQ(neg[i], -a[i]);
    EXPECT_EQ(cj[i], std::conj(a[i]));
  }
  EXPECT_EQ(real(z).dtype(), real_dt);
  EXPECT_EQ(imag(z).data<R>()[1], R(4));
  EXPECT_EQ(complex_abs(z).data<R>()[3], std::abs(a[3]));  // no overflow: 5e30
  EXPECT_EQ(equal(z, z).data<bool>()[0], true);
  EXPECT_EQ(not_equal(z, w).data<bool>()[0], true);
  // traced equals eager
  Function fn([](const std::vector<Value>& v) {
    return Value(conj(v[0].tensor() * v[1].tensor()) - v[0].tensor());
  });
  const Tensor traced = fn({z, w}).tensor();
  const std::vector<C> t = values<C>(traced);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(t[i], std::conj(a[i] * b[i]) - a[i]);
}

TEST(Complex, Complex64AndComplex128) {
  check_dtype<float>(DType::kFloat32, DType::kComplex64);
  check_dtype<double>(DType::kFloat64, DType::kComplex128);
}

TEST(Complex, CastsPrintingAndErrors) {
  const Tensor z = cast(Tensor({1.5f, -2.f}), DType::kComplex64);
  EXPECT_EQ(values<std::complex<float>>(z)[1], std::complex<float>(-2.f, 0.f));
  const Tensor w = complex(Tensor({1.0, 2.0}), Tensor({-3.0, 0.25}));
  EXPECT_EQ(cast(w, DType::kInt32).data<int32_t>()[1], 2);  // the real part, as TensorFlow
  EXPECT_EQ(values<std::complex<float>>(cast(w, DType::kComplex64))[0],
            std::complex<float>(1.f, -3.f));
  EXPECT_EQ(w.to_string(), "[(1-3j) (2+0.25j)]");
  EXPECT_EQ(Tensor(Scalar(2.5), DType::kComplex128).to_string(), "(2.5+0j)");
  expect_error([] { complex(Tensor({1}), Tensor({2})); }, Code::kInvalidArgument,
               {"Complex", "int32"});
  expect_error([] { complex(Tensor({1.f}), Tensor({2.0})); }, Code::kInvalidArgument,
               {"dtype mismatch"});
  expect_error([] { real(Tensor({1.f})); }, Code::kInvalidArgument, {"Real", "complex64"});
  expect_error(
      [] {
        const Tensor z = complex(Tensor({1.f}), Tensor({2.f}));
        less(z, z);
      },
      Code::kInvalidArgument, {"Less"});
}

}  // namespace
}  // namespace kiln
