// Transposes as index maps: a Transpose of a value the cluster does not
// compute joins it as a strided read (the JitKernel node's `maps`), when it
// keeps the last dim last or swaps the inner two (read in tiles); results
// match graph mode and eager.
#include <algorithm>
#include <array>
#include <numeric>

#include "jit_test_util.h"
#include "kiln/context.h"
#include "kiln/ops.h"
#include "test_util.h"

namespace kiln::jit {
namespace {
using kiln::testing::expect_error;
using testing::check_all_modes;
using testing::make;
using testing::random_tensor;

// The function's compiled IR mentions each transposed read.
size_t transposed_reads(Function& f, const std::vector<Value>& args) {
  const std::string hlo = f.get_concrete_function(args)->compiler_ir("hlo");
  size_t n = 0;
  const std::string key = "read through Transpose '";
  for (size_t at = hlo.find(key); at != std::string::npos; at = hlo.find(key, at + 1)) ++n;
  return n;
}

std::vector<std::vector<int64_t>> permutations(int rank) {
  std::vector<int64_t> p(static_cast<size_t>(rank));
  std::iota(p.begin(), p.end(), 0);
  std::vector<std::vector<int64_t>> all;
  do all.push_back(p);
  while (std::next_permutation(p.begin(), p.end()));
  return all;
}

// Whether a transpose joins a cluster: of its dims of more than one value,
// adjacent ones that read adjacent source dims in order taken as one (H, W
// of NHWC read as NCHW), the last reads the source's last (in place) or the
// one before it does (a swap of the inner dims, read in tiles).
bool joins(const Shape& s, const std::vector<int64_t>& perm) {
  std::vector<int64_t> last_of;  // per run of source dims: its last
  for (int64_t p : perm) {
    if (s.dim(static_cast<int>(p)) == 1) continue;
    if (!last_of.empty() && last_of.back() + 1 == p)
      last_of.back() = p;
    else
      last_of.push_back(p);
  }
  const int64_t last = s.rank() - 1;
  const size_t n = last_of.size();
  return n == 0 || last_of[n - 1] == last || (n >= 2 && last_of[n - 2] == last);
}

TEST(JitViews, TransposesReadInPlaceOrInTiles) {
  const std::vector<Shape> shapes = {Shape({5, 7}), Shape({3, 4, 6}), Shape({2, 3, 4, 5}),
                                     Shape({3, 1, 4}), Shape({0, 2, 3})};
  uint32_t seed = 1;
  for (const Shape& s : shapes)
    for (const std::vector<int64_t>& perm : permutations(s.rank())) {
      // Rank 4: the perms that keep the last dim, NHWC <-> NCHW, and [3, 2, 1, 0].
      if (s.rank() == 4 && perm.back() != 3 && perm != std::vector<int64_t>{3, 2, 1, 0} &&
          perm != std::vector<int64_t>{0, 3, 1, 2} && perm != std::vector<int64_t>{0, 2, 3, 1})
        continue;
      // The dtypes in turn (a compile per case; the test stays a few seconds).
      const DType dt =
          std::array{DType::kFloat32, DType::kInt32, DType::kUInt8, DType::kFloat16}[seed / 2 % 4];
      {
        SCOPED_TRACE(str_cat(s, " perm ", Shape(perm), " ", dtype_name(dt)));
        std::vector<int64_t> out;
        for (int64_t p : perm) out.push_back(s.dim(static_cast<int>(p)));
        // y broadcast along every dim but the last.
        auto body = [perm, dt](const std::vector<Value>& a) {
          const Tensor t = transpose(a[0].tensor(), perm) * a[1].tensor();
          return Value(dt == DType::kFloat32 ? tanh(t) + 1.f : t + a[1].tensor());
        };
        const Tensor x = random_tensor(DType::kFloat32, s, seed++) * 10.f;
        const Tensor y = random_tensor(DType::kFloat32, Shape({out.back()}), seed++);
        const std::vector<Value> args = {Value(cast(x, dt)), Value(cast(y, dt))};
        check_all_modes(body, args, s.num_elements() > 0 ? 1 : 0);
        Function j = make(body, true);
        if (s.num_elements() > 0) {
          // The identity permutation is no view: simplify drops the Transpose.
          const bool identity = std::is_sorted(perm.begin(), perm.end());
          EXPECT_EQ(transposed_reads(j, args), joins(s, perm) && !identity ? 1u : 0u);
        }
      }
    }
}

// Swaps of the inner dims run in tiles (runtime.cpp's TilePlan): shapes
// that end tiles part way, values of 1, 2, 4 and 8 bytes, two transposed
// inputs of different sizes in one kernel (tiles sized for both).
TEST(JitViews, InnerDimSwapsAreReadInTiles) {
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
    DType dt;
  };
  const std::vector<Case> cases = {
      {Shape({3, 70, 300}), {0, 2, 1}, DType::kFloat32},
      {Shape({3, 70, 300}), {0, 2, 1}, DType::kFloat64},
      {Shape({513, 257}), {1, 0}, DType::kInt64},
      {Shape({513, 257}), {1, 0}, DType::kUInt8},
      {Shape({130, 2, 67}), {1, 2, 0}, DType::kFloat16},
      {Shape({2, 3, 40, 33}), {0, 1, 3, 2}, DType::kInt32},
      {Shape({2, 3, 40, 33}), {2, 0, 3, 1}, DType::kInt8},
  };
  uint32_t seed = 60;
  for (const Case& tc : cases) {
    SCOPED_TRACE(str_cat(tc.shape, " perm ", Shape(tc.perm), " ", dtype_name(tc.dt)));
    std::vector<int64_t> out;
    for (int64_t p : tc.perm) out.push_back(tc.shape.dim(static_cast<int>(p)));
    const std::vector<int64_t> perm = tc.perm;
    const DType dt = tc.dt;
    auto body = [perm, dt](const std::vector<Value>& a) {
      const Tensor t = transpose(a[0].tensor(), perm) * a[1].tensor();
      return Value(dt == DType::kFloat32 || dt == DType::kFloat64 ? tanh(t) - 0.5f
                                                                  : t + a[1].tensor());
    };
    const Tensor x = random_tensor(DType::kFloat32, tc.shape, seed++) * 10.f;
    const Tensor y = random_tensor(DType::kFloat32, Shape({out.back()}), seed++);
    const std::vector<Value> args = {Value(cast(x, dt)), Value(cast(y, dt))};
    check_all_modes(body, args);
    Function j = make(body, true);
    EXPECT_EQ(transposed_reads(j, args), 1u);
  }
  // uint8 and float64 read transposed by one kernel, beside a plain input.
  auto mixed = [](const std::vector<Value>& a) {
    const Tensor b = cast(transpose(a[0].tensor(), {1, 0}), DType::kFloat64);
    return Value(b * transpose(a[1].tensor(), {1, 0}) + a[2].tensor());
  };
  const std::vector<Value> args = {
      Value(cast(random_tensor(DType::kFloat32, Shape({300, 150}), 70) * 100.f, DType::kUInt8)),
      Value(random_tensor(DType::kFloat64, Shape({300, 150}), 71)),
      Value(random_tensor(DType::kFloat64, Shape({150, 300}), 72))};
  check_all_modes(mixed, args);
  Function j = make(mixed, true);
  EXPECT_EQ(transposed_reads(j, args), 2u);
  EXPECT_EQ(j.get_concrete_function(args)->jit_kernels(), 1u);
}

// Built for [None, None] inputs read transposed, a call where one of them
// broadcasts (inner stride 0) is tiled without copies: each value is read
// with its stride. Sizes of 0 and 1 and tall or wide shapes, one trace.
TEST(JitViews, InnerDimSwapsOfUnknownSizes) {
  const std::vector<ArgSpec> sig = {ArgSpec{DType::kFloat32, Shape({-1, -1}), ""},
                                    ArgSpec{DType::kFloat32, Shape({-1, -1}), ""}};
  auto body = [](const std::vector<Value>& a) {
    return Value(transpose(a[0].tensor(), {1, 0}) * 3.f - transpose(a[1].tensor(), {1, 0}));
  };
  Function g = make(body, false, sig), j = make(body, true, sig);
  uint32_t seed = 80;
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {Shape({70, 90}), Shape({70, 90})}, {Shape({70, 90}), Shape({1, 90})},
      {Shape({70, 90}), Shape({70, 1})},  {Shape({1, 90}), Shape({1, 90})},
      {Shape({90, 1}), Shape({90, 1})},   {Shape({0, 5}), Shape({0, 5})},
      {Shape({3, 600}), Shape({1, 600})}, {Shape({600, 3}), Shape({600, 3})}};
  for (const auto& [xs, ys] : shapes) {
    SCOPED_TRACE(str_cat(xs, " and ", ys));
    const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, xs, seed++)),
                                     Value(random_tensor(DType::kFloat32, ys, seed++))};
    testing::expect_same(j(args).tensor(), g(args).tensor());
  }
  EXPECT_EQ(j.tracing_count(), 1);
  const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, Shape({4, 5}), 1)),
                                   Value(random_tensor(DType::kFloat32, Shape({4, 5}), 2))};
  EXPECT_EQ(transposed_reads(j, args), 2u);
}

TEST(JitViews, UnknownDimsAndSizesChangingAtRunTime) {
  // [None, None, 8] transposed [1, 0, 2]: one kernel for every size.
  const std::vector<ArgSpec> sig = {ArgSpec{DType::kFloat32, Shape({-1, -1, 8}), ""},
                                    ArgSpec{DType::kFloat32, Shape({8}), ""}};
  auto body = [](const std::vector<Value>& a) {
    return Value(relu(transpose(a[0].tensor(), {1, 0, 2}) * a[1].tensor() - 0.5f));
  };
  Function g = make(body, false, sig), j = make(body, true, sig);
  uint32_t seed = 40;
  for (const Shape& s : {Shape({3, 5, 8}), Shape({1, 4, 8}), Shape({6, 1, 8}), Shape({0, 3, 8})}) {
    SCOPED_TRACE(s);
    const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, s, seed++)),
                                     Value(random_tensor(DType::kFloat32, Shape({8}), seed++))};
    testing::expect_same(j(args).tensor(), g(args).tensor());
  }
  EXPECT_EQ(j.tracing_count(), 1);
  EXPECT_EQ(transposed_reads(j, {Value(random_tensor(DType::kFloat32, Shape({3, 5, 8}), 1)),
                                 Value(random_tensor(DType::kFloat32, Shape({8}), 2))}),
            1u);
}

TEST(JitViews, SameValueReadDirectlyAndTransposedAndMembersNeverTransposed) {
  const Tensor x = random_tensor(DType::kFloat32, Shape({4, 4, 6}), 7);
  // x read as it is and through a transpose: two inputs of one kernel.
  auto both = [](const std::vector<Value>& a) {
    const Tensor& v = a[0].tensor();
    return Value(tanh(v) + transpose(v, {1, 0, 2}) * 2.f);
  };
  check_all_modes(both, {Value(x)});
  Function j = make(both, true);
  EXPECT_EQ(transposed_reads(j, {Value(x)}), 1u);
  EXPECT_NE(j.get_concrete_function({Value(x)})->compiler_ir("hlo").find("as [:, :, :] (1, 0, 2)"),
            std::string::npos);
  // The transposed value is computed by an op the cluster could take: that
  // op stays outside (its value is read at other points), the rest fuses.
  auto inner = [](const std::vector<Value>& a) {
    const Tensor m = a[0].tensor() * 3.f + 1.f;
    return Value(exp(transpose(m, {1, 0, 2}) - 2.f) - m);
  };
  check_all_modes(inner, {Value(x)});
  // A transpose read outside the cluster too is a kernel call.
  auto used_twice = [](const std::vector<Value>& a) {
    const Tensor t = transpose(a[0].tensor(), {1, 0, 2});
    return Value::list({Value(tanh(t) * 2.f + 1.f), Value(t)});
  };
  const Value got = make(used_twice, true)({Value(x)}), want = used_twice({Value(x)});
  for (size_t i = 0; i < 2; ++i)
    testing::expect_same(got.items()[i].tensor(), want.items()[i].tensor());
}

TEST(JitViews, TransposeViewsReadTheirSource) {
  View v = whole_view(3);
  v.dims = {{1, 1, -1}, {0, 1, -1}, {2, 1, -1}};
  EXPECT_EQ(view_problem(v), "");
  int64_t dims[3], strides[3];
  EXPECT_EQ(view_dims(v, Shape({2, 3, 4}), dims), "");
  EXPECT_EQ(std::vector<int64_t>(dims, dims + 3), (std::vector<int64_t>{3, 2, 4}));
  EXPECT_EQ(view_strides(v, Shape({2, 3, 4}), strides), 0);
  EXPECT_EQ(std::vector<int64_t>(strides, strides + 3), (std::vector<int64_t>{4, 12, 1}));
  // The node checks its program's views against its inputs before it runs.
  std::vector<Tensor> out;
  const std::vector<Tensor> x = {random_tensor(DType::kFloat32, Shape({2, 2}), 3)};
  auto fails = [&](const View& w, const char* why, const char* also = "") {
    Program p = testing::one_input_program({2, 2});
    p.views = {w};
    expect_error([&] { run_kernel(op_def(OpId::JitKernel), x, testing::program_attrs(p), out); },
                 Code::kInvalidArgument, {why, also});
  };
  View twice = whole_view(2);  // source dim 0 walked twice
  twice.dims[1] = {0, 1, -1};
  fails(twice, "input 0's view: a source dim walked twice");
  View three = whole_view(3);  // x[:, 0, :] of a rank-3 source
  three.dims.erase(three.dims.begin() + 1);
  fails(three, "shape [2,2]", "reads 3 dims");
  fails(whole_view(3), "input 0's view has rank over the kernel's");
}

}  // namespace
}  // namespace kiln::jit
