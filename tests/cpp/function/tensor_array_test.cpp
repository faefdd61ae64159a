// TensorArray's front (src/function/tensor_array.cpp): the static element
// shape learned by writes inside loop bodies and carried out of the loop,
// stack's static length, infer_shape, and value semantics of old handles
// inside traced loops and straight-line traced code.
#include <optional>

#include "function/tensor_fn_util.h"
#include "kiln/control_flow.h"
#include "kiln/function.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::call;
using testing::expect_error;
using testing::expect_tensor;
using testing::expect_tensor_near;
using testing::make_fn;
using testing::Vars;

// Writes x * i at i < n (a Tensor, symbolic when traced) into `ta`; returns
// the array after the loop, rewrapped from `ta`.
TensorArray fill_loop(const TensorArray& ta, const Tensor& x, const Tensor& n) {
  Vars r = while_loop([&](const Vars& v) { return v[0] < n; },
                      [&](const Vars& v) {
                        Tensor xi = x * cast(v[0], x.dtype());
                        return Vars{v[0] + 1, ta.with_handle(v[1]).write(v[0], xi).handle()};
                      },
                      {Tensor(0), ta.handle()});
  return ta.with_handle(r[1]);
}

// ---- the element shape carried out of loops ----

TEST(TensorArrayShapes, ElementShapeLearnedInTheBodySurvivesTheLoop) {
  std::optional<Shape> elem, stacked, original, dyn_stacked, arg_stacked;
  Function f = make_fn([&](const Vars& a) {
    TensorArray ta(DType::kFloat32, 5);  // element shape not given
    TensorArray out = fill_loop(ta, a[0], Tensor(5));
    elem = out.element_shape();
    original = ta.element_shape();  // the whole family learned it
    Tensor s = out.stack();
    stacked = s.shape();
    // Without a static size the length is unknown: dynamic_size, or a size
    // known only when the function runs.
    dyn_stacked = fill_loop(TensorArray(DType::kFloat32, 0, true), a[0], Tensor(5)).stack().shape();
    arg_stacked = fill_loop(TensorArray(DType::kFloat32, a[1]), a[0], a[1]).stack().shape();
    return Vars{s};
  });
  Vars r = call(f, {Tensor({1.f, 2.f, 3.f}), Tensor(5)});
  EXPECT_EQ(*elem, Shape({3}));
  EXPECT_EQ(*original, Shape({3}));
  EXPECT_EQ(*stacked, Shape({5, 3}));
  EXPECT_EQ(*dyn_stacked, Shape({-1, 3}));
  EXPECT_EQ(*arg_stacked, Shape({-1, 3}));
  std::vector<float> want;
  for (int i = 0; i < 5; ++i)
    for (float v : {1.f, 2.f, 3.f}) want.push_back(v * static_cast<float>(i));
  expect_tensor<float>(r[0], {5, 3}, want);
}

// The seed guide's dynamic_rnn: states.stack() is [max_seq_len, batch,
// units] statically, as in TensorFlow (batch unknown when the spec says so).
TEST(TensorArrayShapes, SeedDynamicRnnStackHasTheStaticShape) {
  std::optional<Shape> states_shape;
  Function f = make_fn([&](const Vars& a) {
    Tensor input = transpose(a[0], {1, 0, 2});  // [time, batch, features]
    const int64_t max_seq_len = input.shape()[0];
    TensorArray states(DType::kFloat32, max_seq_len);
    Vars r = while_loop(
        [&](const Vars& v) { return v[0] < static_cast<int32_t>(max_seq_len); },
        [&](const Vars& v) {
          Tensor state = tanh(gather(input, v[0]) + v[1]);
          return Vars{v[0] + 1, state, states.with_handle(v[2]).write(v[0], state).handle()};
        },
        {Tensor(0), a[1], states.handle()});
    Tensor s = states.with_handle(r[2]).stack();
    states_shape = s.shape();
    return Vars{transpose(s, {1, 0, 2})};
  });
  f.get_concrete_function({Value(ArgSpec{DType::kFloat32, Shape({2, 6, 4}), ""}),
                           Value(ArgSpec{DType::kFloat32, Shape({2, 4}), ""})});
  EXPECT_EQ(*states_shape, Shape({6, 2, 4}));
  f.get_concrete_function({Value(ArgSpec{DType::kFloat32, Shape({-1, 6, 4}), ""}),
                           Value(ArgSpec{DType::kFloat32, Shape({-1, 4}), ""})});
  EXPECT_EQ(*states_shape, Shape({6, -1, 4}));
  Vars r = call(f, {ones({3, 6, 4}), zeros({3, 4})});
  EXPECT_EQ(r[0].shape(), Shape({3, 6, 4}));
}

TEST(TensorArrayShapes, WritesOfDifferentStaticShapesTeachWhatTheyShare) {
  // One branch writes x ([None, 3] when traced), the other ones [2, 3]:
  // after the loop only [None, 3] is certain.
  std::optional<Shape> elem;
  Function f = make_fn([&](const Vars& a) {
    TensorArray ta(DType::kFloat32, 4);
    Vars r = while_loop([](const Vars& v) { return v[0] < 4; },
                        [&](const Vars& v) {
                          TensorArray cur = ta.with_handle(v[1]);
                          Tensor h = cond(
                              v[0] % 2 == 0, [&] { return Vars{cur.write(v[0], a[0]).handle()}; },
                              [&] {
                                return Vars{cur.write(v[0], ones({2, 3})).handle()};
                              })[0];
                          return Vars{v[0] + 1, h};
                        },
                        {Tensor(0), ta.handle()});
    TensorArray out = ta.with_handle(r[1]);
    elem = out.element_shape();
    return Vars{out.stack()};
  });
  f.get_concrete_function({Value(ArgSpec{DType::kFloat32, Shape({-1, 3}), ""})});
  EXPECT_EQ(*elem, Shape({-1, 3}));
  Vars r = call(f, {fill({2, 3}, 2.f)});
  EXPECT_EQ(r[0].shape(), Shape({4, 2, 3}));
  EXPECT_EQ(reduce_sum(r[0]).item<float>(), 2 * 6 * 2.f + 2 * 6 * 1.f);
}

TEST(TensorArrayShapes, AnEagerLoopResultKnowsItsElementShape) {
  TensorArray ta(DType::kFloat32, 4);
  TensorArray out = fill_loop(ta, Tensor({1.f, 2.f}), Tensor(4));
  EXPECT_EQ(out.element_shape(), Shape({2}));
  EXPECT_FALSE(ta.element_shape().rank_known());  // eagerly each value keeps its own
  EXPECT_EQ(out.stack().shape(), Shape({4, 2}));
}

TEST(TensorArrayShapes, UnstackSetsTheStaticSizeAndChecksTheElementShape) {
  std::optional<Shape> stacked, grown, rewrapped;
  Function f = make_fn([&](const Vars& a) {
    TensorArray ta = TensorArray(DType::kFloat32, 3).unstack(a[0]);
    stacked = ta.stack().shape();
    grown = TensorArray(DType::kFloat32, 0, true).unstack(a[0]).stack().shape();
    // Unstacked in a loop body: the array after the loop has no static size.
    TensorArray tmpl(DType::kFloat32, 3);
    Vars r = while_loop([](const Vars& v) { return v[0] < 1; },
                        [&](const Vars& v) {
                          TensorArray t = tmpl.with_handle(v[1]).unstack(concat({a[0], a[0]}, 0));
                          return Vars{v[0] + 1, t.handle()};
                        },
                        {Tensor(0), tmpl.handle()});
    TensorArray after = tmpl.with_handle(r[1]);
    rewrapped = after.stack().shape();
    return Vars{ta.read(1), after.stack()};
  });
  Vars r = call(f, {Tensor({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}})});
  EXPECT_EQ(*stacked, Shape({3, 2}));
  EXPECT_EQ(*grown, Shape({-1, 2}));  // dynamic_size: writes may grow it
  EXPECT_EQ(*rewrapped, Shape({-1, 2}));
  expect_tensor<float>(r[0], {2}, {3.f, 4.f});
  EXPECT_EQ(r[1].shape(), Shape({6, 2}));
  TensorArray typed(DType::kFloat32, 2, false, Shape({3}));
  expect_error(
      [&] {
        typed.unstack(Tensor({{1.f, 2.f}}));
      },
      Code::kInvalidArgument, {"TensorArray.unstack", "elements have shape [3]"});
}

// ---- infer_shape ----

TEST(TensorArrayShapes, WithoutInferShapeElementsMayDiffer) {
  // Element i is range(i + 1): lengths differ. Reads see each shape; stack
  // cannot join them. With infer_shape the second write fails.
  for (bool traced : {false, true}) {
    SCOPED_TRACE(traced ? "traced" : "eager");
    auto run = [](bool infer) {
      TensorArray ta(DType::kFloat32, 3, false, Shape::unknown_rank(), infer);
      Vars r = while_loop([](const Vars& v) { return v[0] < 3; },
                          [&](const Vars& v) {
                            Tensor e = cast(range(Tensor(0), v[0] + 1, Tensor(1)), DType::kFloat32);
                            return Vars{v[0] + 1, ta.with_handle(v[1]).write(v[0], e).handle()};
                          },
                          {Tensor(0), ta.handle()});
      TensorArray out = ta.with_handle(r[1]);
      if (!infer) {
        EXPECT_FALSE(out.element_shape().rank_known());
      }
      return Vars{out.read(2), out.read(0), r[1]};
    };
    Function g = make_fn([&](const Vars&) { return run(false); }, "g");
    Function h = make_fn([&](const Vars&) { return run(true); }, "h");
    Vars r = traced ? call(g, {}) : run(false);
    expect_tensor<float>(r[0], {3}, {0.f, 1.f, 2.f});
    expect_tensor<float>(r[1], {1}, {0.f});
    // (Rewrapped by an unrelated TensorArray: a concrete handle's own size
    // counts, not the wrapper's.)
    TensorArray holder(DType::kFloat32, 0);
    expect_error([&] { holder.with_handle(r[2]).stack(); }, Code::kInvalidArgument,
                 {"element 1 has shape [2]", "element 0 has shape [1]"});
    expect_error([&] { traced ? call(h, {}) : run(true); }, Code::kInvalidArgument,
                 {"value has shape [2]", "elements have shape [1]"});
  }
}

TEST(TensorArrayShapes, InferShapeChecksWritesStaticallyWhenTraced) {
  Function f = make_fn([&](const Vars& a) {
    TensorArray ta(DType::kFloat32, 2);
    ta = ta.write(0, a[0]);
    return Vars{ta.write(1, concat({a[0], a[0]}, 0)).stack()};
  });
  expect_error(
      [&] {
        call(f, {Tensor({1.f, 2.f})});
      },
      Code::kInvalidArgument, {"value has shape [4]", "elements have shape [2]"});
}

// ---- value semantics of old handles ----

TEST(TensorArrayValues, OldHandlesInsideAndAcrossTracedLoopIterations) {
  // Each iteration overwrites item 0 with x * i, then reads item 0 from the
  // list it wrote to (the old handle): that read sees the previous value.
  // `prev` carries the list before the last write out of the loop.
  Function f = make_fn([](const Vars& a) {
    const Tensor& x = a[0];
    TensorArray ta(DType::kFloat32, 2, false, x.shape());
    Vars r = while_loop([&](const Vars& v) { return v[0] < a[1]; },
                        [&](const Vars& v) {
                          TensorArray cur = ta.with_handle(v[1]);
                          TensorArray next = cur.write(0, x * cast(v[0], DType::kFloat32));
                          Tensor old = cur.read(0);  // after the write, in program order
                          return Vars{v[0] + 1, next.handle(), v[1], v[3] + old};
                        },
                        {Tensor(0), ta.handle(), ta.handle(), zeros_like(x)});
    return Vars{ta.with_handle(r[1]).read(0), ta.with_handle(r[2]).read(0), r[3]};
  });
  const int n = 6;
  Vars r = call(f, {Tensor({1.f, 10.f}), Tensor(n)});
  expect_tensor<float>(r[0], {2}, {5.f, 50.f});  // last: x * (n - 1)
  expect_tensor<float>(r[1], {2}, {4.f, 40.f});  // before the last write
  const float s = (n - 1) * (n - 2) / 2.f;       // sum of x * (i - 1), i = 1..n-1
  expect_tensor<float>(r[2], {2}, {s, 10 * s});
}

TEST(TensorArrayValues, StraightLineTracedWritesAndOldReads) {
  // h1 is read after h2 was written from it (so h1 is not written in
  // place); the chain into h3 has no other reader (in place).
  Function f = make_fn([](const Vars& a) {
    TensorArray h0(DType::kFloat32, 3, false, Shape({1}));
    TensorArray h1 = h0.write(0, a[0]);
    TensorArray h2 = h1.write(0, a[0] * 2.f);
    Tensor old = h1.read(0);
    TensorArray h3 = h2.write(1, a[0] * 3.f).write(2, a[0] * 4.f);
    return Vars{old, h3.stack(), h0.stack()};
  });
  Vars r = call(f, {Tensor({1.5f})});
  expect_tensor<float>(r[0], {1}, {1.5f});
  expect_tensor<float>(r[1], {3, 1}, {3.f, 4.5f, 6.f});
  expect_tensor<float>(r[2], {3, 1}, {0.f, 0.f, 0.f});
  r = call(f, {Tensor({2.f})});
  expect_tensor<float>(r[1], {3, 1}, {4.f, 6.f, 8.f});
}

TEST(TensorArrayValues, LongTracedLoopMatchesAReference) {
  // 3000 writes (several trie levels); every 5th overwrites an earlier
  // item (k / 2) and leaves index k unwritten.
  Function f = make_fn([](const Vars& a) {
    TensorArray ta(DType::kInt32, 0, /*dynamic_size=*/true);
    Vars r = while_loop([&](const Vars& v) { return v[0] < a[0]; },
                        [&](const Vars& v) {
                          Tensor at = cond(
                              v[0] % 5 == 4, [&] { return Vars{floordiv(v[0], 2)}; },
                              [&] { return Vars{v[0]}; })[0];
                          return Vars{v[0] + 1, ta.with_handle(v[1]).write(at, v[0]).handle()};
                        },
                        {Tensor(0), ta.handle()});
    return Vars{ta.with_handle(r[1]).stack()};
  });
  const int n = 3000;
  std::vector<int32_t> ref;  // unwritten items read as 0
  for (int k = 0; k < n; ++k) {
    const size_t at = static_cast<size_t>(k % 5 == 4 ? k / 2 : k);
    if (at >= ref.size()) ref.resize(at + 1, 0);
    ref[at] = k;
  }
  const int64_t len = static_cast<int64_t>(ref.size());
  expect_tensor<int32_t>(call(f, {Tensor(n)})[0], {len}, ref);
}

}  // namespace
}  // namespace kiln
