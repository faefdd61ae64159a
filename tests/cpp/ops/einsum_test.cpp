// einsum against a plain loop over every letter, eagerly, in a function and
// under jit_compile; matmul-lowered contractions, sums, diagonals, ellipses.
#include <map>

#include "kiln/function.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;

struct Case {
  std::string eq;
  std::vector<Shape> shapes;
};

// The reference: out[o] = sum over the other letters of prod_k x_k[letters].
std::vector<double> reference(const Case& c, const std::vector<std::vector<double>>& xs,
                              Shape& out_shape) {
  const std::string lhs = c.eq.substr(0, c.eq.find("->")), out = c.eq.substr(c.eq.find("->") + 2);
  std::vector<std::string> terms;
  for (size_t b = 0;;) {
    const size_t e = lhs.find(',', b);
    terms.push_back(lhs.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  std::map<char, int64_t> size;
  for (size_t k = 0; k < terms.size(); ++k)
    for (size_t i = 0; i < terms[k].size(); ++i) size[terms[k][i]] = c.shapes[k].dim(i);
  std::string letters;
  for (const auto& [ch, n] : size) letters += ch;
  out_shape = Shape();
  for (char ch : out) out_shape.push_back(size[ch]);
  std::vector<double> r(static_cast<size_t>(out_shape.num_elements()), 0.0);
  std::map<char, int64_t> at;
  for (char ch : letters) at[ch] = 0;
  for (;;) {
    double p = 1;
    for (size_t k = 0; k < terms.size(); ++k) {
      int64_t idx = 0;
      for (size_t i = 0; i < terms[k].size(); ++i) idx = idx * c.shapes[k].dim(i) + at[terms[k][i]];
      p *= xs[k][static_cast<size_t>(idx)];
    }
    int64_t o = 0;
    for (char ch : out) o = o * size[ch] + at[ch];
    r[static_cast<size_t>(o)] += p;
    size_t j = letters.size();
    while (j > 0 && ++at[letters[j - 1]] == size[letters[j - 1]]) at[letters[--j]] = 0;
    if (j == 0) break;
  }
  return r;
}

const std::vector<Case> kCases = {
    {"ij,jk->ik", {{3, 4}, {4, 5}}},
    {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
    {"abc,cde->abde", {{2, 3, 4}, {4, 2, 3}}},          // MultiHeadAttention's projection
    {"aecd,abcd->acbe", {{2, 3, 2, 4}, {2, 5, 2, 4}}},  // its attention scores
    {"acbe,aecd->abcd", {{2, 2, 5, 3}, {2, 3, 2, 4}}},  // its attention output
    {"ij,ij->i", {{3, 4}, {3, 4}}},
    {"ii->i", {{3, 3}}},
    {"ij->ji", {{2, 3}}},
    {"ij,k->ijk", {{2, 3}, {2}}},
    {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
    {"ij,jk->", {{2, 3}, {3, 2}}},
};

std::vector<Tensor> operands(const Case& c, std::vector<std::vector<double>>& raw) {
  std::vector<Tensor> xs;
  for (size_t k = 0; k < c.shapes.size(); ++k) {
    std::vector<double> v(static_cast<size_t>(c.shapes[k].num_elements()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.7 * static_cast<double>(i + 3 * k));
    raw.push_back(v);
    xs.push_back(cast(Tensor::from_vector(v, c.shapes[k]), DType::kFloat32));
  }
  return xs;
}

void check(const Tensor& got, const Shape& shape, const std::vector<double>& want) {
  ASSERT_EQ(got.shape(), shape);
  const Tensor g = cast(got, DType::kFloat64);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(g.data<double>()[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << i;
}

TEST(Einsum, MatchesTheReferenceEagerlyInAFunctionAndUnderJit) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.eq);
    std::vector<std::vector<double>> raw;
    const std::vector<Tensor> xs = operands(c, raw);
    Shape shape;
    const std::vector<double> want = reference(c, raw, shape);
    check(einsum(c.eq, xs), shape, want);
    for (bool jit : {false, true}) {
      FunctionOptions opts;
      opts.jit_compile = jit;
      Function fn(
          [&](const std::vector<Value>& a) {
            std::vector<Tensor> ts;
            for (const Value& v : a) ts.push_back(v.tensor());
            return Value(einsum(c.eq, ts));
          },
          opts);
      std::vector<Value> args(xs.begin(), xs.end());
      check(fn(args).tensor(), shape, want);
    }
  }
}

TEST(Einsum, ImplicitOutputAndEllipsis) {
  const Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = Tensor::from_vector<float>({1, 0, 2, 1, 0, 1}, {3, 2});
  const Tensor ab = matmul(a, b);
  testing::expect_tensor_near<float>(einsum("ij,jk", {a, b}), ab.shape(), ab.to_vector<float>(),
                                     1e-6);
  const Tensor x = Tensor::from_vector<float>(std::vector<float>(24, 1.0f), {2, 2, 2, 3});
  EXPECT_EQ(einsum("...ij,jk->...ik", {x, b}).shape(), Shape({2, 2, 2, 2}));
}

TEST(Einsum, Errors) {
  const Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  expect_error([&] { einsum("ij,jk->ik", {a}); }, Code::kInvalidArgument, {"2 terms for 1"});
  expect_error([&] { einsum("ijk->i", {a}); }, Code::kInvalidArgument, {"does not match"});
  expect_error([&] { einsum("ij->iz", {a}); }, Code::kInvalidArgument, {"output letters"});
  expect_error([&] { einsum("i1->i", {a}); }, Code::kInvalidArgument, {"malformed"});
}

}  // namespace
}  // namespace kiln
