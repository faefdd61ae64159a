// The lists behind TensorArray handles (src/ops/tensor_list.h): the shared
// item trie (value semantics, growth, merging), in-place writes of uniquely
// owned handles, and the TensorList ops on long lists, against plain
// std::vector references.
#include "ops/tensor_list.h"

#include <thread>

#include "kiln/control_flow.h"
#include "kiln/function.h"
#include "test_util.h"

namespace kiln {
namespace {
using detail::TensorList;
using testing::expect_error;
using testing::expect_tensor;

// ---- the trie ----

// The items of `l` as ints (-1 = never written), checked against `want`.
void expect_items(const TensorList& l, const std::vector<int>& want) {
  ASSERT_EQ(l.size(), static_cast<int64_t>(want.size()));
  for (size_t k = 0; k < want.size(); ++k) {
    const Tensor t = l.get(static_cast<int64_t>(k));
    EXPECT_EQ(t.defined() ? t.item<int32_t>() : -1, want[k]) << "item " << k;
  }
}

Ref<TensorList> new_list(int64_t size) {
  auto* l = new TensorList();
  l->dtype = DType::kInt32;
  l->grow(size);
  return Ref<TensorList>::adopt(l);
}

TEST(TensorListTrie, CopiesKeepTheirItemsAcrossManyWrites) {
  // Every 97th version is kept and checked at the end: later writes (to
  // copies) never change an earlier list, across leaf and level boundaries.
  const int n = 3000;
  Ref<TensorList> cur = new_list(0);
  std::vector<int> ref;
  std::vector<std::pair<Ref<TensorList>, std::vector<int>>> kept;
  for (int k = 0; k < n; ++k) {
    Ref<TensorList> next = Ref<TensorList>::adopt(cur->copy());
    // Mostly appends; every 5th write overwrites an earlier item.
    const int64_t at = k % 5 == 4 ? (k * 7) % static_cast<int>(ref.size()) : ref.size();
    next->set(at, Tensor(k));
    if (at == static_cast<int64_t>(ref.size()))
      ref.push_back(k);
    else
      ref[static_cast<size_t>(at)] = k;
    cur = next;
    if (k % 97 == 0) kept.emplace_back(cur, ref);
  }
  expect_items(*cur, ref);
  for (const auto& [list, items] : kept) expect_items(*list, items);
}

TEST(TensorListTrie, SparseWritesGrowAndLeaveGapsUnwritten) {
  Ref<TensorList> l = new_list(3);
  for (int64_t i : {0, 31, 32, 1023, 1024, 40000}) l->set(i, Tensor(static_cast<int>(i)));
  EXPECT_EQ(l->size(), 40001);
  for (int64_t i : {0, 31, 32, 1023, 1024, 40000})
    EXPECT_EQ(l->get(i).item<int32_t>(), static_cast<int>(i));
  for (int64_t i : std::vector<int64_t>{1, 30, 33, 1022, 1025, 39999, 40001, -1, int64_t{1} << 40})
    EXPECT_FALSE(l->get(i).defined()) << i;
  std::vector<int64_t> leaves;
  l->for_each_leaf([&](int64_t begin, const detail::ListLeaf&) { leaves.push_back(begin); });
  EXPECT_EQ(leaves, (std::vector<int64_t>{0, 32, 992, 1024, 40000}));
  Shape s;
  EXPECT_TRUE(l->common_shape(s));
  EXPECT_EQ(s, Shape());
  EXPECT_FALSE(new_list(5)->common_shape(s));
}

TEST(TensorListTrie, IndexBeyondInt32IsAClearError) {
  Ref<TensorList> l = new_list(0);
  expect_error([&] { l->set(int64_t{1} << 31, Tensor(1)); }, Code::kInvalidArgument,
               {"index 2147483648 is out of range"});
}

Tensor add_ints(int64_t, const Tensor& a, const Tensor& b) {
  return Tensor(a.item<int32_t>() + b.item<int32_t>());
}

TEST(TensorListTrie, MergeCombinesItemsAndKeepsTheLongerSize) {
  Ref<TensorList> a = new_list(2000), b = new_list(0);
  std::vector<int> want(2000, -1);
  for (int k = 0; k < 2000; k += 3) {
    a->set(k, Tensor(k));
    want[static_cast<size_t>(k)] = k;
  }
  for (int k : {1, 3, 40, 1500}) {
    b->set(k, Tensor(1000000));
    want[static_cast<size_t>(k)] = want[static_cast<size_t>(k)] < 0 ? 1000000 : k + 1000000;
  }
  Ref<TensorList> out = new_list(0);
  TensorList::merge(*a, *b, *out, add_ints);
  expect_items(*out, want);
  Ref<TensorList> rev = new_list(0);
  TensorList::merge(*b, *a, *rev, add_ints);
  expect_items(*rev, want);
  // Inputs unchanged.
  EXPECT_EQ(a->get(3).item<int32_t>(), 3);
  EXPECT_EQ(b->get(3).item<int32_t>(), 1000000);
  EXPECT_EQ(b->size(), 1501);
}

// ---- ops: in-place writes and value semantics ----

Tensor reserve(int64_t n, bool dynamic = false) {
  return call_op1(OpId::TensorListReserve, {Tensor(n)},
                  Attrs{DType::kFloat32, std::vector<int64_t>{}, true, dynamic});
}
Tensor set_item(Tensor h, int64_t i, float v) {
  return call_op1(OpId::TensorListSetItem, {std::move(h), Tensor(i), Tensor(v)}, {DType::kFloat32});
}
float get_item(const Tensor& h, int64_t i) {
  return call_op1(OpId::TensorListGetItem, {h, Tensor(i)},
                  Attrs{DType::kFloat32, std::vector<int64_t>{}, false})
      .item<float>();
}

TEST(TensorListOps, AWriteToAUniquelyOwnedHandleIsInPlace) {
  Tensor h = reserve(4);
  const Resource* list = h.resource();
  Tensor h2 = set_item(std::move(h), 0, 1.f);  // nothing else holds h: in place
  EXPECT_EQ(h2.resource(), list);
  Tensor kept = h2;  // now shared: the next write copies
  Tensor h3 = set_item(h2, 1, 2.f);
  EXPECT_NE(h3.resource(), list);
  EXPECT_EQ(get_item(kept, 1), 0.f);
  EXPECT_EQ(get_item(h3, 1), 2.f);
  EXPECT_EQ(get_item(h3, 0), 1.f);
}

TEST(TensorListOps, OldHandlesKeepTheirItemsAfterLaterWrites) {
  // A chain of 200 eager writes keeping every handle: each still reads
  // what it held when it was made.
  std::vector<Tensor> hs{reserve(0, /*dynamic=*/true)};
  for (int k = 0; k < 200; ++k) hs.push_back(set_item(hs.back(), k % 50, static_cast<float>(k)));
  for (size_t v = 1; v < hs.size(); ++v) {
    const int64_t n = call_op1(OpId::TensorListLength, {hs[v]}).item<int32_t>();
    EXPECT_EQ(n, std::min<int64_t>(static_cast<int64_t>(v), 50));
    for (int64_t i = 0; i < n; ++i) {
      // The last write to i among the first v writes.
      int64_t last = -1;
      for (int64_t k = 0; k < static_cast<int64_t>(v); ++k)
        if (k % 50 == i) last = k;
      EXPECT_EQ(get_item(hs[v], i), static_cast<float>(last)) << "version " << v << " item " << i;
    }
  }
}

TEST(TensorListOps, ConcurrentWritesToOneSharedListFromThreads) {
  // Threads write their own chains from one shared list: nodes are shared
  // but never changed, so nobody sees another thread's items.
  TensorArray base(DType::kFloat32, 2000);
  for (int64_t k = 0; k < 2000; k += 7) base = base.write(k, Tensor(-1.f));
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      TensorArray mine = base;
      for (int64_t k = t; k < 2000; k += 4) mine = mine.write(k, Tensor(static_cast<float>(t)));
      std::vector<float> got = mine.stack().to_vector<float>();
      for (int64_t k = 0; k < 2000; ++k) {
        const float want = k % 4 == t ? static_cast<float>(t) : (k % 7 == 0 ? -1.f : 0.f);
        bad[static_cast<size_t>(t)] += got[static_cast<size_t>(k)] != want;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, (std::vector<int>{0, 0, 0, 0}));
  std::vector<float> got = base.stack().to_vector<float>();
  for (int64_t k = 0; k < 2000; ++k) EXPECT_EQ(got[static_cast<size_t>(k)], k % 7 ? 0.f : -1.f);
}

TEST(TensorListOps, LongListsStackAddAndZerosLike) {
  // 1500 items with gaps: stack fills the gaps with zeros; Add of a list
  // with one item (a read's gradient) adds just that item.
  TensorArray ta(DType::kFloat32, 1500, false, Shape({2}));
  std::vector<float> want(3000, 0.f);
  for (int64_t k = 0; k < 1500; ++k)
    if (k % 3 != 1) {
      ta = ta.write(k, Tensor({static_cast<float>(k), 1.f}));
      want[static_cast<size_t>(2 * k)] = static_cast<float>(k);
      want[static_cast<size_t>(2 * k + 1)] = 1.f;
    }
  expect_tensor<float>(ta.stack(), {1500, 2}, want);
  Tensor one = TensorArray(DType::kFloat32, 1500).write(700, Tensor({0.5f, 0.5f})).handle();
  Tensor sum = call_op1(OpId::TensorListAdd, {ta.handle(), one});
  want[1400] += 0.5f;
  want[1401] += 0.5f;
  Tensor stacked = call_op1(OpId::TensorListStack, {sum},
                            Attrs{DType::kFloat32, std::vector<int64_t>{2}, false});
  expect_tensor<float>(stacked, {1500, 2}, want);
  Tensor zeros = call_op1(OpId::TensorListZerosLike, {sum});
  EXPECT_EQ(call_op1(OpId::TensorListLength, {zeros}).item<int32_t>(), 1500);
  expect_tensor<float>(call_op1(OpId::TensorListStack, {zeros},
                                Attrs{DType::kFloat32, std::vector<int64_t>{2}, false}),
                       {1500, 2}, std::vector<float>(3000, 0.f));
}

// ---- stack's num_elements ----

TEST(TensorListOps, StackChecksNumElements) {
  Tensor h = TensorArray(DType::kFloat32, 3).write(0, Tensor({1.f})).handle();
  const Attrs three{DType::kFloat32, std::vector<int64_t>{1}, false, int64_t{3}};
  expect_tensor<float>(call_op1(OpId::TensorListStack, {h}, three), {3, 1}, {1.f, 0.f, 0.f});
  const Attrs four{DType::kFloat32, std::vector<int64_t>{1}, false, int64_t{4}};
  expect_error([&] { call_op1(OpId::TensorListStack, {h}, four); }, Code::kInvalidArgument,
               {"expected 4 elements", "has 3"});
  const Attrs bad{DType::kFloat32, std::vector<int64_t>{1}, false, int64_t{-2}};
  expect_error([&] { call_op1(OpId::TensorListStack, {h}, bad); }, Code::kInvalidArgument,
               {"num_elements must be >= 0"});
  // Traced with a static element shape and count, the plan skips
  // inference: the kernel checks the count.
  FunctionOptions o;
  o.name = "stack4";
  Function f(
      [&](const std::vector<Value>& a) {
        Tensor l = call_op1(OpId::TensorListReserve, {a[0].tensor()},
                            Attrs{DType::kFloat32, std::vector<int64_t>{2}, false});
        return Value(call_op1(OpId::TensorListStack, {l},
                              Attrs{DType::kFloat32, std::vector<int64_t>{2}, false, int64_t{4}}));
      },
      o);
  Tensor r = f({Value(Tensor(4))}).tensor();
  expect_tensor<float>(r, {4, 2}, std::vector<float>(8, 0.f));
  expect_error([&] { f({Value(Tensor(5))}); }, Code::kInvalidArgument,
               {"expected 4 elements", "has 5"});
}

}  // namespace
}  // namespace kiln
