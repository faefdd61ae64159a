// slice, strided_slice and index(), checked against a Python-slicing
// reference written here.
#include <limits>
#include <optional>
#include <random>

#include "array_test_util.h"

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

TEST(StridedSlice, PythonIndexingCases) {
  const std::vector<std::vector<RefItem>> cases = {
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

TEST(StridedSlice, RandomIndexesAgainstReference) {
  std::mt19937 rng(7);
  auto rnd = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint32_t>(hi - lo + 1));
  };
  for (int trial = 0; trial < 600; ++trial) {
    const int64_t r = rnd(0, 4);
    Shape s;
    for (int64_t d = 0; d < r; ++d) s.push_back(rnd(0, 6));
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

}  // namespace
}  // namespace kiln
