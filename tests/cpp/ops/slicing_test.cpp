// slice, strided_slice, index() and StridedSliceGrad, checked against a
// Python-slicing reference written here.
#include <limits>
#include <optional>
#include <random>

#include "array_test_util.h"
#include "kiln/function.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_moved;
using testing::expect_tensor;
using testing::infer_shape;
using testing::iota;
using testing::kAllDTypes;
using testing::sym;

// ---- slice ----

std::vector<int64_t> box_src(const Shape& in, const std::vector<int64_t>& begin,
                             const Shape& size) {
  std::vector<int64_t> src;
  for (int64_t j = 0; j < size.num_elements(); ++j) {
    auto idx = testing::unravel(j, size);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] += begin[d];
    src.push_back(testing::ravel(idx, in));
  }
  return src;
}

TEST(Slice, BoxesEveryDtype) {
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = iota(dt, {4, 5, 3});
    expect_moved(slice(x, {1, 2, 0}, {2, 3, 3}), x, {2, 3, 3},
                 box_src({4, 5, 3}, {1, 2, 0}, {2, 3, 3}));
    expect_moved(slice(x, {1, 0, 1}, {-1, -1, 1}), x, {3, 5, 1},
                 box_src({4, 5, 3}, {1, 0, 1}, {3, 5, 1}));
    expect_moved(slice(x, {4, 0, 0}, {0, 5, 3}), x, {0, 5, 3}, {});
    expect_moved(slice(x, {0, 0, 0}, {-1, -1, -1}), x, {4, 5, 3},
                 box_src({4, 5, 3}, {0, 0, 0}, {4, 5, 3}));
  }
  // int32 tensors for begin/size; scalars.
  Tensor x({{1, 2, 3}, {4, 5, 6}});
  expect_tensor<int32_t>(slice(x, Tensor({0, 1}), Tensor({2, 2})), {2, 2}, {2, 3, 5, 6});
  expect_tensor<int32_t>(slice(Tensor(7), std::vector<int64_t>{}, std::vector<int64_t>{}), {}, {7});
}

TEST(Slice, ContiguousSlicesAreViews) {
  Tensor x = iota(DType::kFloat32, {4, 5, 3});
  Tensor rows = slice(x, {1, 0, 0}, {2, 5, 3});
  EXPECT_TRUE(testing::shares_buffer(rows, x));
  EXPECT_EQ(static_cast<const float*>(rows.raw_data()), x.data<float>() + 15);
  Tensor one_row_part = slice(x, {2, 1, 0}, {1, 2, 3});  // contiguous inside row 2
  EXPECT_TRUE(testing::shares_buffer(one_row_part, x));
  expect_moved(one_row_part, x, {1, 2, 3}, box_src({4, 5, 3}, {2, 1, 0}, {1, 2, 3}));
  Tensor cols = slice(x, {0, 1, 0}, {2, 2, 3});  // not contiguous: a copy
  EXPECT_FALSE(testing::shares_buffer(cols, x));
}

TEST(Slice, Errors) {
  Tensor x = iota(DType::kInt32, {4, 5});
  expect_error([&] { slice(x, {0}, {1}); }, Code::kInvalidArgument,
               {"Slice", "one entry per dimension", "[4,5]"});
  expect_error([&] { slice(x, {0, 0}, {1}); }, Code::kInvalidArgument, {"Slice", "same length"});
  expect_error(
      [&] {
        slice(x, {-1, 0}, {1, 1});
      },
      Code::kInvalidArgument, {"Slice", "begin[0] = -1", ">= 0"});
  expect_error(
      [&] {
        slice(x, {5, 0}, {0, 1});
      },
      Code::kInvalidArgument, {"Slice", "begin[0] = 5", "out of bounds", "size 4"});
  expect_error(
      [&] {
        slice(x, {1, 2}, {1, 4});
      },
      Code::kInvalidArgument, {"Slice", "[2, 2 + 4)", "dimension 1", "size 5"});
  expect_error(
      [&] {
        slice(x, {0, 0}, {-2, 1});
      },
      Code::kInvalidArgument, {"Slice", "size[0] = -2"});
  expect_error(
      [&] {
        slice(x, Tensor({0.f, 0.f}), Tensor({1, 1}));
      },
      Code::kInvalidArgument, {"Slice", "begin", "int32 or int64", "float32"});
  EXPECT_EQ(
      infer_shape(OpId::Slice, {sym(DType::kInt32, {-1, 5}), Tensor({1, 1}), Tensor({2, -1})}),
      Shape({2, 4}));
  EXPECT_EQ(infer_shape(OpId::Slice,
                        {iota(DType::kInt32, {4, 5}), sym(DType::kInt32, {2}), Tensor({2, -1})}),
            Shape({2, -1}));
  EXPECT_EQ(infer_shape(OpId::Slice, {sym(DType::kInt32, Shape::unknown_rank()),
                                      sym(DType::kInt32, {3}), sym(DType::kInt32, {-1})}),
            Shape({-1, -1, -1}));
}

// ---- reference Python indexing ----

// One entry of a Python index: int, slice, None (new axis) or ellipsis.
struct RefItem {
  enum Kind { kInt, kSlice, kNew, kEll };
  explicit RefItem(Kind k, int64_t index = 0, std::optional<int64_t> a = {},
                   std::optional<int64_t> b = {}, std::optional<int64_t> c = {})
      : kind(k), i(index), start(a), stop(b), step(c) {}
  Kind kind;
  int64_t i;
  std::optional<int64_t> start, stop, step;
};

// Python's slice.indices(n) followed by range().
std::vector<int64_t> py_range(const RefItem& it, int64_t n) {
  const int64_t step = it.step.value_or(1);
  int64_t start, stop;
  if (step > 0) {
    start = it.start ? *it.start : 0;
    stop = it.stop ? *it.stop : n;
    if (start < 0) start = std::max<int64_t>(start + n, 0);
    if (stop < 0) stop = std::max<int64_t>(stop + n, 0);
    start = std::min(start, n);
    stop = std::min(stop, n);
  } else {
    start = it.start ? *it.start : n - 1;
    stop = it.stop ? *it.stop : -1 - n;  // "before the beginning"
    if (start < 0) start = std::max<int64_t>(start + n, -1);
    if (stop < 0) stop = std::max<int64_t>(stop + n, -1);
    start = std::min(start, n - 1);
    stop = std::min(stop, n - 1);
  }
  std::vector<int64_t> r;
  for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) r.push_back(k);
  return r;
}

// Evaluates x[items] on shape `in`; returns the output shape and the source
// flat index of each output element. Returns false for an IndexError.
bool ref_index(const Shape& in, std::vector<RefItem> items, Shape* out_shape,
               std::vector<int64_t>* src) {
  // Expand the ellipsis (or append one) to cover all input dims.
  int64_t consumed = 0;
  bool has_ell = false;
  for (const auto& it : items) {
    consumed += it.kind == RefItem::kInt || it.kind == RefItem::kSlice;
    has_ell |= it.kind == RefItem::kEll;
  }
  if (!has_ell) items.push_back(RefItem(RefItem::kEll));
  std::vector<RefItem> full;
  for (const auto& it : items) {
    if (it.kind != RefItem::kEll) {
      full.push_back(it);
      continue;
    }
    for (int64_t k = 0; k < in.rank() - consumed; ++k) full.push_back(RefItem(RefItem::kSlice));
  }
  // Per input dim: the chosen indices; per output dim: which selector.
  std::vector<std::vector<int64_t>> sel;  // per input dim
  std::vector<int64_t> out_from;          // per output dim: input dim, or -1 new axis
  int64_t d = 0;
  for (const auto& it : full) {
    if (it.kind == RefItem::kNew) {
      out_from.push_back(-1);
      continue;
    }
    if (d >= in.rank()) return false;
    const int64_t n = in.dim(d);
    if (it.kind == RefItem::kInt) {
      const int64_t k = it.i < 0 ? it.i + n : it.i;
      if (k < 0 || k >= n) return false;
      sel.push_back({k});
    } else {
      sel.push_back(py_range(it, n));
      out_from.push_back(d);
    }
    ++d;
  }
  Shape os;
  for (int64_t f : out_from)
    os.push_back(f < 0 ? 1 : static_cast<int64_t>(sel[static_cast<size_t>(f)].size()));
  *out_shape = os;
  src->clear();
  // Iterate the input-dim selections in order (output order matches).
  Shape sel_shape;
  for (const auto& s : sel) sel_shape.push_back(static_cast<int64_t>(s.size()));
  const int64_t total = sel_shape.num_elements();
  for (int64_t j = 0; j < total; ++j) {
    auto k = testing::unravel(j, sel_shape);
    std::vector<int64_t> idx;
    for (size_t q = 0; q < sel.size(); ++q) idx.push_back(sel[q][static_cast<size_t>(k[q])]);
    src->push_back(testing::ravel(idx, in));
  }
  return true;
}

IndexItem to_item(const RefItem& r) {
  switch (r.kind) {
    case RefItem::kInt: return r.i;
    case RefItem::kSlice: return Slice(r.start, r.stop, r.step);
    case RefItem::kNew: return kNewAxis;
    case RefItem::kEll: return kEllipsis;
  }
  return kEllipsis;
}

std::string describe(const std::vector<RefItem>& items) {
  std::string s = "[";
  auto opt = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : ""; };
  for (const auto& it : items) {
    if (s.size() > 1) s += ", ";
    switch (it.kind) {
      case RefItem::kInt: s += std::to_string(it.i); break;
      case RefItem::kSlice:
        s += opt(it.start);
        s += ':';
        s += opt(it.stop);
        if (it.step) {
          s += ':';
          s += opt(it.step);
        }
        break;
      case RefItem::kNew: s += "None"; break;
      case RefItem::kEll: s += "..."; break;
    }
  }
  return s + "]";
}

void check_index(const Tensor& x, const std::vector<RefItem>& items) {
  SCOPED_TRACE(str_cat("x", describe(items), " on shape ", x.shape(), " ", dtype_name(x.dtype())));
  std::vector<IndexItem> lowered;
  for (const auto& r : items) lowered.push_back(to_item(r));
  Shape os;
  std::vector<int64_t> src;
  if (!ref_index(x.shape(), items, &os, &src)) {
    expect_error([&] { index(x, lowered); }, Code::kInvalidArgument, {"StridedSlice"});
    return;
  }
  expect_moved(index(x, lowered), x, os, src);
}

RefItem I(int64_t i) {
  return RefItem(RefItem::kInt, i);
}
RefItem S(std::optional<int64_t> a = {}, std::optional<int64_t> b = {},
          std::optional<int64_t> c = {}) {
  return RefItem(RefItem::kSlice, 0, a, b, c);
}
const RefItem kNew(RefItem::kNew);
const RefItem kEll(RefItem::kEll);

std::vector<std::vector<RefItem>> python_indexing_cases() {
  return {
      {S(1)},                  // x[1:]
      {S(1), S({}, {}, 2)},    // x[1:, ::2]
      {S({}, {}, -1)},         // x[::-1]
      {kEll, kNew, I(0)},      // x[..., None, 0]
      {I(-1)},                 // x[-1]
      {I(0), I(1), I(2)},      // x[0, 1, 2]
      {S(-2), S(-100, 100)},   // clamping
      {S(3, 1)},               // empty
      {S(3, 1, -1)},           // reversed range
      {S(-1, -5, -2), kEll},   // negative step from the end
      {kNew, kNew, S({}, 2)},  // leading new axes
      {kEll},                  // everything
      {},                      // no index at all
      {kEll, S({}, {}, -2)},   // last axis reversed by 2
      {I(1), kEll, I(-1)},     // ints around an ellipsis
      {S({}, {}, 3), kNew, I(2), kNew},
      {S(100, {}, -1)},   // start clamped to the end, negative step
      {S({}, -100, -1)},  // stop before the beginning
      {S({}, {}, std::numeric_limits<int64_t>::max())},
      {S({}, {}, std::numeric_limits<int64_t>::min())},
      {S(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())},
  };
}

TEST(StridedSlice, PythonIndexingCases) {
  const std::vector<std::vector<RefItem>> cases = python_indexing_cases();
  for (DType dt : kAllDTypes) {
    Tensor x = iota(dt, {4, 3, 5});
    for (const auto& c : cases) check_index(x, c);
  }
  // The documented examples, spelled with the C++ helpers.
  Tensor m({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}});
  expect_tensor<int32_t>(index(m, {Slice(1, None), Slice().step(2)}), {2, 2}, {4, 6, 7, 9});
  expect_tensor<int32_t>(index(m, {Slice().step(-1)}), {3, 3}, {7, 8, 9, 4, 5, 6, 1, 2, 3});
  expect_tensor<int32_t>(index(m, {kEllipsis, kNewAxis, 0}), {3, 1}, {1, 4, 7});
  expect_tensor<int32_t>(index(m, {1, 2}), {}, {6});
  expect_tensor<int32_t>(index(m, {-1, Slice(None, None, -1)}), {3}, {9, 8, 7});
}

TEST(StridedSlice, OneEntryIndexesOnEitherSideOfTheCachedRange) {
  // index() reuses per-thread spec tensors for one-entry specs in [-64, 4096).
  std::vector<int32_t> v(5000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i);
  const Tensor x = Tensor::from_vector(v, {5000});
  for (int64_t i : {-5000, -65, -64, -63, -2, -1, 0, 1, 4094, 4095, 4096, 4097, 4999}) {
    SCOPED_TRACE(i);
    const int32_t at = static_cast<int32_t>(i < 0 ? i + 5000 : i);
    expect_tensor<int32_t>(index(x, {i}), {}, {at});
    expect_tensor<int32_t>(index(index(x, {Slice(i, None)}), {0}), {}, {at});  // x[i:][0]
    // Traced: the cached tensors become the graph's constants.
    Function f([i](const std::vector<Value>& a) { return Value(index(a[0].tensor(), {i})); });
    expect_tensor<int32_t>(f({Value(x)}).tensor(), {}, {at});
  }
  expect_error([&] { index(x, {int64_t{5000}}); }, Code::kInvalidArgument, {"out of bounds"});
}

// A random shape (rank 0-4, dims 0-6) and a random index into it.
struct RandomIndexer {
  std::mt19937 rng;
  explicit RandomIndexer(uint32_t seed) : rng(seed) {}
  int64_t rnd(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint32_t>(hi - lo + 1));
  }
  Shape shape() {
    const int64_t r = rnd(0, 4);
    Shape s;
    for (int64_t d = 0; d < r; ++d) s.push_back(rnd(0, 6));
    return s;
  }
  std::vector<RefItem> items();
};

std::vector<RefItem> RandomIndexer::items() {
  std::vector<RefItem> items;
  const int64_t n = rnd(0, 5);
  bool ell = false;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t kind = rnd(0, 9);
    if (kind <= 1) {
      items.push_back(I(rnd(-7, 7)));
    } else if (kind <= 6) {
      auto bound = [&]() -> std::optional<int64_t> {
        if (rnd(0, 3) == 0) return std::nullopt;
        return rnd(-8, 8);
      };
      std::optional<int64_t> step;
      if (rnd(0, 1)) {
        step = rnd(-3, 3);
        if (*step == 0) step = -1;
      }
      items.push_back(S(bound(), bound(), step));
    } else if (kind <= 8) {
      items.push_back(kNew);
    } else if (!ell) {
      items.push_back(kEll);
      ell = true;
    }
  }
  return items;
}

TEST(StridedSlice, RandomIndexesAgainstReference) {
  RandomIndexer gen(7);
  for (int trial = 0; trial < 600; ++trial) {
    const Shape s = gen.shape();
    const std::vector<RefItem> items = gen.items();
    const DType dt = kAllDTypes[static_cast<size_t>(trial) % kAllDTypes.size()];
    check_index(iota(dt, s), items);
  }
}

TEST(StridedSlice, LargeStridedCopies) {
  // Big enough to be split over the thread pool; negative and positive steps.
  Tensor x = iota(DType::kFloat32, {300, 400});
  check_index(x, {S({}, {}, -1), S(1, {}, 3)});
  check_index(x, {S(5, 290, 2)});
  check_index(x, {kEll, S({}, {}, -1)});
  Tensor s = iota(DType::kString, {200, 300});
  check_index(s, {S({}, {}, 2), S({}, {}, -1)});
}

TEST(StridedSlice, ContiguousResultsAreViews) {
  Tensor x = iota(DType::kInt64, {5, 4});
  Tensor rows = index(x, {Slice(1, 3)});
  EXPECT_TRUE(testing::shares_buffer(rows, x));
  EXPECT_EQ(static_cast<const int64_t*>(rows.raw_data()), x.data<int64_t>() + 4);
  Tensor row = index(x, {2});
  EXPECT_TRUE(testing::shares_buffer(row, x));
  Tensor rev = index(x, {Slice().step(-1)});
  EXPECT_FALSE(testing::shares_buffer(rev, x));
}

TEST(StridedSlice, RawMasksAndTensorArguments) {
  Tensor x = iota(DType::kInt32, {4, 6});
  // x[1:, ::2] with begin/end masks as TensorFlow emits it.
  Tensor y = strided_slice(x, Tensor({1, 0}), Tensor({0, 0}), Tensor({1, 2}), /*begin_mask=*/2,
                           /*end_mask=*/3);
  expect_tensor<int32_t>(y, {3, 3}, {6, 8, 10, 12, 14, 16, 18, 20, 22});
  // Vector form with default strides, and masks past the spec length ignored.
  expect_tensor<int32_t>(strided_slice(x, {1}, {3}, {}, 0, int64_t{1} << 40), {2, 6},
                         {6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17});
  // Initializer-list form with shrink and new axis.
  // x[None, 2]: entry 0 is a new axis, entry 1 an index into dimension 0.
  expect_tensor<int32_t>(strided_slice(x, {0, 2}, {0, 3}, {1, 1}, 0, 0, 0, 1, 2), {1, 6},
                         {12, 13, 14, 15, 16, 17});
}

TEST(StridedSlice, Errors) {
  Tensor x = iota(DType::kInt32, {4, 6});
  expect_error([&] { index(x, {4}); }, Code::kInvalidArgument,
               {"StridedSlice", "index 4", "dimension 0", "size 4"});
  expect_error(
      [&] {
        index(x, {0, -7});
      },
      Code::kInvalidArgument, {"StridedSlice", "index -7", "dimension 1", "size 6", "[-6, 6)"});
  expect_error([&] { index(x, {0, 0, 0}); }, Code::kInvalidArgument, {"StridedSlice", "rank 2"});
  expect_error([&] { index(x, {Slice().step(0)}); }, Code::kInvalidArgument, {"step", "zero"});
  expect_error([&] { index(x, {kEllipsis, kEllipsis}); }, Code::kInvalidArgument, {"one ellipsis"});
  expect_error([&] { strided_slice(x, {0}, {1}, {0}); }, Code::kInvalidArgument,
               {"StridedSlice", "strides[0] must be non-zero"});
  expect_error(
      [&] {
        strided_slice(x, {0, 0}, {1, 1}, {1, 1}, 0, 0, 3);
      },
      Code::kInvalidArgument, {"StridedSlice", "more than one ellipsis"});
  expect_error([&] { strided_slice(x, {1}, {2}, {-1}, 0, 0, 0, 0, 1); }, Code::kInvalidArgument,
               {"StridedSlice", "strides[0] = -1", "integer index"});
  expect_error(
      [&] {
        strided_slice(x, {0, 0}, {1}, {1, 1});
      },
      Code::kInvalidArgument, {"StridedSlice", "same length"});
  {
    // Spec vectors of unknown length in a function: the lengths are checked per call.
    FunctionOptions o;
    const ArgSpec vec{DType::kInt32, Shape{-1}, ""};
    o.input_signature = std::vector<ArgSpec>{vec, vec, vec};
    Function f(
        [&](const std::vector<Value>& a) {
          return Value(strided_slice(x, a[0].tensor(), a[1].tensor(), a[2].tensor()));
        },
        o);
    expect_error(
        [&] {
          f({Tensor({0, 0}), Tensor({1}), Tensor({1, 1})});
        },
        Code::kInvalidArgument, {"StridedSlice", "same length"});
    expect_error(
        [&] {
          f({Tensor({0}), Tensor({1}), Tensor({1, 1})});
        },
        Code::kInvalidArgument, {"StridedSlice", "same length"});
  }
  expect_error([&] { strided_slice(x, Tensor({0}), Tensor({1}), Tensor({1.f})); },
               Code::kInvalidArgument, {"StridedSlice", "strides", "int32 or int64"});
  expect_error([&] { strided_slice(x, Tensor({{0}}), Tensor({1}), Tensor({1})); },
               Code::kInvalidArgument, {"StridedSlice", "begin", "vector"});
  expect_error([&] { strided_slice(Tensor(1), {0}, {1}, {1}); }, Code::kInvalidArgument,
               {"StridedSlice", "rank 0"});
  std::vector<IndexItem> many(65, Slice());
  expect_error([&] { index(x, many); }, Code::kInvalidArgument, {"at most 64"});
}

TEST(StridedSlice, InferenceWithUnknowns) {
  auto ss = [](const Tensor& x, const Tensor& b, const Tensor& e, const Tensor& s, Attrs masks) {
    return infer_shape(OpId::StridedSlice, {x, b, e, s}, masks);
  };
  // Known spec, unknown dims: shrink/new axes still known.
  EXPECT_EQ(ss(sym(DType::kFloat32, {-1, 5, 3}), Tensor({0, 1, 0}), Tensor({0, 4, 0}),
               Tensor({1, 1, 1}), {int64_t{0}, int64_t{0}, int64_t{4}, int64_t{1}, int64_t{0}}),
            Shape({1, -1, 5, 3}));
  // x[1:, 0] on [?, 4]: a sliced unknown dim is unknown.
  EXPECT_EQ(ss(sym(DType::kFloat32, {-1, 4}), Tensor({1, 0}), Tensor({0, 1}), Tensor({1, 1}),
               {int64_t{0}, int64_t{1}, int64_t{0}, int64_t{0}, int64_t{2}}),
            Shape({-1}));
  // Unknown begin values: rank known from the masks, dims unknown except
  // shrunk and ellipsis ones.
  EXPECT_EQ(ss(iota(DType::kFloat32, {4, 5, 6}), sym(DType::kInt32, {3}), Tensor({0, 0, 0}),
               Tensor({1, 1, 1}), {int64_t{0}, int64_t{0}, int64_t{2}, int64_t{0}, int64_t{1}}),
            Shape({5, -1}));
  EXPECT_EQ(
      ss(sym(DType::kFloat32, Shape::unknown_rank()), Tensor({0}), Tensor({1}), Tensor({1}), {}),
      Shape::unknown_rank());
  EXPECT_EQ(ss(iota(DType::kFloat32, {4}), sym(DType::kInt32, {-1}), sym(DType::kInt32, {-1}),
               sym(DType::kInt32, {-1}), {}),
            Shape::unknown_rank());
}

// ---- StridedSliceGrad ----

const std::vector<DType> kNumericDTypes = {DType::kInt8,  DType::kUInt8,   DType::kInt32,
                                           DType::kInt64, DType::kFloat32, DType::kFloat64};

// The raw StridedSlice spec of a Python index (what index() builds).
struct RawSpec {
  std::vector<int64_t> begin, end, strides;
  Attrs masks;
};
RawSpec lower(const std::vector<RefItem>& items) {
  RawSpec r;
  int64_t bm = 0, em = 0, ell = 0, na = 0, sh = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const RefItem& it = items[i];
    const int64_t bit = int64_t{1} << i;
    int64_t b = 0, e = 0, st = 1;
    switch (it.kind) {
      case RefItem::kInt:
        b = it.i;
        e = it.i + 1;
        sh |= bit;
        break;
      case RefItem::kSlice:
        st = it.step.value_or(1);
        if (it.start)
          b = *it.start;
        else
          bm |= bit;
        if (it.stop)
          e = *it.stop;
        else
          em |= bit;
        break;
      case RefItem::kNew: na |= bit; break;
      case RefItem::kEll: ell |= bit; break;
    }
    r.begin.push_back(b);
    r.end.push_back(e);
    r.strides.push_back(st);
  }
  r.masks = {bm, em, ell, na, sh};
  return r;
}

Tensor ssg(const Tensor& shape, const Tensor& b, const Tensor& e, const Tensor& s, const Tensor& dy,
           const Attrs& masks = {}) {
  return call_op1(OpId::StridedSliceGrad, {shape, b, e, s, dy}, masks);
}
Tensor ssg(const Shape& shape, const RawSpec& r, const Tensor& dy) {
  return ssg(Tensor::from_vector(shape.to_vector(), Shape({shape.rank()})),
             Tensor::from_vector(r.begin, Shape({static_cast<int64_t>(r.begin.size())})),
             Tensor::from_vector(r.end, Shape({static_cast<int64_t>(r.end.size())})),
             Tensor::from_vector(r.strides, Shape({static_cast<int64_t>(r.strides.size())})), dy,
             r.masks);
}

// Naive scatter: out = zeros(shape); out[src[j]] += dy[j], as a source map
// for expect_moved (-1 = the zero fill).
std::vector<int64_t> scatter_src(const Shape& shape, const std::vector<int64_t>& src) {
  std::vector<int64_t> from(static_cast<size_t>(shape.num_elements()), -1);
  for (size_t j = 0; j < src.size(); ++j) {
    EXPECT_EQ(from[static_cast<size_t>(src[j])], -1) << "a slice reads each element once";
    from[static_cast<size_t>(src[j])] = static_cast<int64_t>(j);
  }
  return from;
}

// StridedSliceGrad(shape, spec of items, dy) against the reference, dy of
// dtype dt with distinct values; an IndexError must be InvalidArgument.
void check_slice_grad(const Shape& shape, const std::vector<RefItem>& items, DType dt) {
  SCOPED_TRACE(str_cat("grad of x", describe(items), " on shape ", shape, " ", dtype_name(dt)));
  const RawSpec r = lower(items);
  Shape os;
  std::vector<int64_t> src;
  if (!ref_index(shape, items, &os, &src)) {
    expect_error([&] { ssg(shape, r, iota(dt, {0})); }, Code::kInvalidArgument,
                 {"StridedSliceGrad"});
    return;
  }
  const Tensor dy = iota(dt, os);
  expect_moved(ssg(shape, r, dy), dy, shape, scatter_src(shape, src), Tensor(Scalar(0), dt));
}

TEST(StridedSliceGrad, PythonIndexingCases) {
  for (DType dt : kNumericDTypes)
    for (const auto& c : python_indexing_cases()) check_slice_grad({4, 3, 5}, c, dt);
  // x[1:, ::2] on [3, 4] by hand: dy = [[1, 2], [3, 4]].
  Tensor g = ssg(Tensor({3, 4}), Tensor({1, 0}), Tensor({0, 0}), Tensor({1, 2}),
                 Tensor({{1.f, 2.f}, {3.f, 4.f}}), {int64_t{2}, int64_t{3}});
  expect_tensor<float>(g, {3, 4}, {0, 0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0});
  // x[::-2, 1] on [5, 2] (int64 spec): rows 4, 2, 0 of column 1.
  g = ssg(Tensor({int64_t{5}, int64_t{2}}), Tensor({int64_t{0}, int64_t{1}}),
          Tensor({int64_t{0}, int64_t{2}}), Tensor({int64_t{-2}, int64_t{1}}),
          Tensor({7.0, 8.0, 9.0}), {int64_t{3}, int64_t{1}, int64_t{0}, int64_t{0}, int64_t{2}});
  expect_tensor<double>(g, {5, 2}, {0, 9, 0, 0, 0, 8, 0, 0, 0, 7});
}

TEST(StridedSliceGrad, RandomIndexesAgainstReference) {
  RandomIndexer gen(11);
  for (int trial = 0; trial < 600; ++trial) {
    const Shape s = gen.shape();
    const std::vector<RefItem> items = gen.items();
    check_slice_grad(s, items, kNumericDTypes[static_cast<size_t>(trial) % kNumericDTypes.size()]);
  }
}

TEST(StridedSliceGrad, LargeStridedScatters) {
  // Split over the thread pool; negative and positive steps.
  for (const auto& items : std::vector<std::vector<RefItem>>{{S({}, {}, -1), S(1, {}, 3)},
                                                             {S(5, 290, 2)},
                                                             {kEll, S({}, {}, -1)},
                                                             {S(-3, 2, -7), I(17)}})
    check_slice_grad({300, 400}, items, DType::kFloat32);
}

TEST(StridedSliceGrad, WholeSliceIsAViewOfDy) {
  Tensor dy = iota(DType::kFloat32, {3, 4});
  Tensor g = ssg({3, 4}, lower({}), dy);
  EXPECT_TRUE(testing::shares_buffer(g, dy));
  expect_moved(g, dy, {3, 4}, box_src({3, 4}, {0, 0}, {3, 4}));
  // x[None, ..., 0] on [1, 4, 1]: every element in order, shape restored.
  dy = iota(DType::kFloat64, {1, 1, 4});
  g = ssg({1, 4, 1}, lower({kNew, kEll, I(0)}), dy);
  EXPECT_TRUE(testing::shares_buffer(g, dy));
  expect_moved(g, dy, {1, 4, 1}, {0, 1, 2, 3});
}

// Inside a traced function with every input a placeholder (nothing known
// while tracing), and with only begin dynamic.
TEST(StridedSliceGrad, InTracedFunction) {
  FunctionOptions opts;
  const ArgSpec vec2{DType::kInt64, Shape{2}, ""};
  opts.input_signature =
      std::vector<ArgSpec>{vec2, vec2, vec2, vec2, ArgSpec{DType::kFloat32, Shape{-1}, ""}};
  Function all_dynamic(
      [](const std::vector<Value>& a) {
        return Value(ssg(a[0].tensor(), a[1].tensor(), a[2].tensor(), a[3].tensor(), a[4].tensor(),
                         {int64_t{1}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{2}}));
      },
      opts);
  // x[:3, k] on [4, 5] for k = 0..4, and x[:-1:2, k] via strides.
  for (int64_t k = 0; k < 5; ++k)
    for (int64_t st : {1, 2}) {
      SCOPED_TRACE(str_cat("k = ", k, ", step ", st));
      const int64_t rows = st == 1 ? 3 : 2;
      Tensor dy = iota(DType::kFloat32, {rows});
      Value r = all_dynamic({Tensor({int64_t{4}, int64_t{5}}), Tensor({int64_t{0}, k}),
                             Tensor({int64_t{3}, k + 1}), Tensor({st, int64_t{1}}), dy});
      std::vector<float> want(20, 0.f);
      for (int64_t i = 0; i < rows; ++i)
        want[static_cast<size_t>(i * st * 5 + k)] = static_cast<float>(i) + 0.5f;
      expect_tensor<float>(r.tensor(), {4, 5}, want);
    }
  EXPECT_EQ(all_dynamic.tracing_count(), 1);

  // Constant shape, begin from an argument: x[i] on [3, 2] (static output
  // spec, so the kernel validates the spec at run time).
  Function row([](const std::vector<Value>& a) {
    Tensor i = a[0].tensor();
    Tensor b = stack({i}), e = stack({i + 1});
    return Value(ssg(Tensor({3, 2}), b, e, Tensor({1}), a[1].tensor(),
                     {int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{1}}));
  });
  for (int i = -3; i < 3; ++i) {
    Tensor g = row({Tensor(i), Tensor({1.0, 2.0})}).tensor();
    std::vector<double> want(6, 0.0);
    want[static_cast<size_t>((i + 3) % 3 * 2)] = 1.0;
    want[static_cast<size_t>((i + 3) % 3 * 2 + 1)] = 2.0;
    expect_tensor<double>(g, {3, 2}, want);
  }
  expect_error(
      [&] {
        row({Tensor(3), Tensor({1.0, 2.0})});
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "index 3", "size 3"});
  expect_error(
      [&] {
        row({Tensor(0), Tensor({1.0, 2.0, 3.0})});
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "dy has shape [3]", "[2]"});

  // Spec vectors of unknown length with a constant shape: the output spec
  // is static, so the kernel checks the lengths.
  FunctionOptions vopts;
  const ArgSpec vec{DType::kInt32, Shape{-1}, ""};
  vopts.input_signature =
      std::vector<ArgSpec>{vec, vec, vec, ArgSpec{DType::kFloat32, Shape::unknown_rank(), ""}};
  Function spec_args(
      [](const std::vector<Value>& a) {
        return Value(
            ssg(Tensor({2, 3}), a[0].tensor(), a[1].tensor(), a[2].tensor(), a[3].tensor()));
      },
      vopts);
  expect_tensor<float>(
      spec_args({Tensor({1}), Tensor({2}), Tensor({1}), Tensor({{1.f, 2.f, 3.f}})}).tensor(),
      {2, 3}, {0, 0, 0, 1, 2, 3});
  expect_error(
      [&] {
        spec_args({Tensor({1, 0}), Tensor({2}), Tensor({1}), Tensor({{1.f, 2.f, 3.f}})});
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "same length", "2, 1 and 1"});
  expect_error(
      [&] {
        spec_args({Tensor({1}), Tensor({2}), Tensor({1}), Tensor({1.f, 2.f, 3.f})});
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "dy has shape [3]", "[1,3]"});
}

TEST(StridedSliceGrad, Errors) {
  const Tensor shp({4, 6}), b({1, 0}), e({3, 6}), st({1, 2});
  // x[1:3, 0:6:2] has shape [2, 3].
  expect_tensor<float>(
      ssg(shp, b, e, st, iota(DType::kFloat32, {2, 3})), {4, 6},
      {0, 0, 0, 0, 0, 0, 0.5, 0, 1.5, 0, 2.5, 0, 3.5, 0, 4.5, 0, 5.5, 0, 0, 0, 0, 0, 0, 0});
  expect_error(
      [&] {
        ssg(shp, b, e, st, iota(DType::kFloat32, {2, 4}));
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "dy has shape [2,4]", "[4,6]", "[2,3]"});
  expect_error(
      [&] {
        ssg(shp, b, e, st, iota(DType::kFloat32, {3, 2}));
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "dy has shape [3,2]"});
  expect_error([&] { ssg(shp, b, e, st, iota(DType::kFloat32, {6})); }, Code::kInvalidArgument,
               {"StridedSliceGrad", "dy has shape [6]"});
  expect_error(
      [&] {
        ssg(Tensor({4, -6}), b, e, st, iota(DType::kFloat32, {2, 3}));
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "shape[1] = -6", ">= 0"});
  expect_error(
      [&] {
        ssg(Tensor({{4, 6}}), b, e, st, iota(DType::kFloat32, {2, 3}));
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "shape"});
  expect_error(
      [&] {
        ssg(Tensor({4.f, 6.f}), b, e, st, iota(DType::kFloat32, {2, 3}));
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "int32 or int64"});
  expect_error(
      [&] {
        ssg(Tensor({4}), b, e, st, iota(DType::kFloat32, {2, 3}));
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "rank 1"});
  expect_error(
      [&] {
        ssg(shp, Tensor({1}), e, st, iota(DType::kFloat32, {2, 3}));
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "same length"});
  expect_error(
      [&] {
        ssg(shp, b, e, Tensor({1, 0}), iota(DType::kFloat32, {2, 3}));
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "strides[1] must be non-zero"});
  expect_error(
      [&] {
        ssg(shp, b, e, st, iota(DType::kString, {2, 3}));
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "numeric", "string"});
  expect_error(
      [&] {
        ssg(shp, b, e, st, iota(DType::kBool, {2, 3}));
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "numeric", "bool"});
  expect_error(
      [&] {
        ssg(shp, Tensor({5, 0}), Tensor({6, 1}), Tensor({1, 1}), iota(DType::kFloat32, {}),
            {int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{3}});
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "index 5", "size 4"});
}

TEST(StridedSliceGrad, InferenceWithUnknowns) {
  const Tensor b({0, 1}), e({2, 3}), st({1, 1});
  const Attrs shrink0 = {int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{1}};
  // Constant shape: the output shape; dy's unknown dims are accepted.
  EXPECT_EQ(infer_shape(OpId::StridedSliceGrad,
                        {Tensor({4, 5}), b, e, st, sym(DType::kFloat32, {-1, 2})}),
            Shape({4, 5}));
  // Unknown shape values of known length: rank only.
  EXPECT_EQ(infer_shape(OpId::StridedSliceGrad,
                        {sym(DType::kInt32, {2}), sym(DType::kInt32, {2}), e, st,
                         sym(DType::kFloat64, {2})},
                        shrink0),
            Shape({-1, -1}));
  // Unknown length: unknown rank.
  EXPECT_EQ(infer_shape(OpId::StridedSliceGrad,
                        {sym(DType::kInt64, {-1}), b, e, st, sym(DType::kFloat32, {2, 2})}),
            Shape::unknown_rank());
  // Output dtype is dy's.
  auto specs =
      testing::infer(OpId::StridedSliceGrad, {Tensor({4, 5}), b, e, st, sym(DType::kInt8, {2, 2})});
  EXPECT_EQ(specs[0].dtype, DType::kInt8);
  // Mismatches found while tracing: rank from the masks, known dims.
  expect_error(
      [&] {
        infer_shape(
            OpId::StridedSliceGrad,
            {sym(DType::kInt32, {2}), sym(DType::kInt32, {2}), e, st, sym(DType::kFloat32, {2, 2})},
            shrink0);
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "dy has shape [2,2]"});
  expect_error(
      [&] {
        infer_shape(OpId::StridedSliceGrad,
                    {Tensor({4, 5}), b, e, st, sym(DType::kFloat32, {-1, 3})});
      },
      Code::kInvalidArgument, {"StridedSliceGrad", "dy has shape [?,3]", "[2,2]"});
}

}  // namespace
}  // namespace kiln
