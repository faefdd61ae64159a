#include <thread>

#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;

TEST(Tensor, ScalarsMapCxxTypes) {
  expect_tensor<int32_t>(Tensor(7), {}, {7});
  expect_tensor<int64_t>(Tensor(int64_t{7}), {}, {7});
  expect_tensor<float>(Tensor(1.5f), {}, {1.5f});
  expect_tensor<double>(Tensor(1.5), {}, {1.5});
  expect_tensor<bool>(Tensor(true), {}, {true});
  expect_tensor<std::string>(Tensor("aa"), {}, {"aa"});
}

TEST(Tensor, NestedLists) {
  Tensor t({{1, 2}, {3, 4}});
  expect_tensor<int32_t>(t, {2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(t.at<int32_t>({1, 0}), 3);
  expect_tensor<float>(Tensor({{{1.f}, {2.f}}}), {1, 2, 1}, {1.f, 2.f});
  expect_tensor<double>(Tensor({{{{1.0, 2.0}}}}), {1, 1, 1, 2}, {1.0, 2.0});
  expect_tensor<std::string>(Tensor({"a", "b"}), {2}, {"a", "b"});
  expect_tensor<bool>(Tensor({true, false}), {2}, {true, false});
}

TEST(Tensor, RaggedListIsAnError) {
  expect_error([] { Tensor({{1, 2}, {3}}); }, Code::kInvalidArgument, {"ragged"});
}

TEST(Tensor, FromSpanChecksSize) {
  std::vector<float> v{1, 2, 3, 4, 5, 6};
  expect_tensor<float>(Tensor::from_vector(v, {2, 3}), {2, 3}, v);
  expect_error([&] { Tensor::from_vector(v, {4}); }, Code::kInvalidArgument, {"6 values"});
}

TEST(Tensor, ScalarConversionIsChecked) {
  expect_tensor<uint8_t>(Tensor(Scalar(200), DType::kUInt8), {}, {200});
  expect_tensor<float>(Tensor(Scalar(2), DType::kFloat32), {}, {2.f});
  expect_tensor<int32_t>(Tensor(Scalar(3.0), DType::kInt32), {}, {3});
  expect_error([] { Tensor(Scalar(1.5), DType::kInt32); }, Code::kInvalidArgument,
               {"1.5", "int32"});
  expect_error([] { Tensor(Scalar(300), DType::kUInt8); }, Code::kInvalidArgument,
               {"out of range", "uint8"});
  expect_error([] { Tensor(Scalar(-1), DType::kUInt8); }, Code::kInvalidArgument, {"uint8"});
  expect_error([] { Tensor(Scalar(1), DType::kString); }, Code::kInvalidArgument, {"string"});
}

TEST(Tensor, TypedAccessChecksDtypeAndBounds) {
  Tensor t({1, 2, 3});
  expect_error([&] { t.data<float>(); }, Code::kInvalidArgument, {"int32", "float32"});
  expect_error([&] { t.at<int32_t>({3}); }, Code::kOutOfRange, {"index 3"});
  expect_error([&] { t.at<int32_t>({0, 0}); }, Code::kInvalidArgument, {"rank 1"});
  expect_error([&] { t.item<int32_t>(); }, Code::kInvalidArgument, {"3 elements"});
  expect_error([] { Tensor().raw_data(); }, Code::kFailedPrecondition, {"undefined"});
}

TEST(Tensor, ViewSharesTheBuffer) {
  Tensor t({{1, 2, 3}, {4, 5, 6}});
  Tensor v = t.view({3, 2});
  EXPECT_EQ(v.raw_data(), t.raw_data());
  expect_tensor<int32_t>(v, {3, 2}, {1, 2, 3, 4, 5, 6});
  expect_error([&] { t.view({4}); }, Code::kInvalidArgument, {"[2,3]", "[4]"});
}

TEST(Tensor, EmptyAndZeroSized) {
  Tensor z = Tensor::empty(DType::kFloat32, {0, 3});
  EXPECT_EQ(z.num_elements(), 0);
  EXPECT_EQ(z.to_string(), "[]");
  expect_error([] { Tensor::empty(DType::kFloat32, {-2}); }, Code::kInvalidArgument,
               {"partially known or has negative dims"});
}

TEST(Tensor, AllocationCapGivesResourceExhausted) {
  const int64_t saved = config().max_allocation_bytes;
  config().max_allocation_bytes = 1 << 20;
  expect_error([] { Tensor::empty(DType::kFloat32, {1 << 20}); }, Code::kResourceExhausted,
               {"allocation cap"});
  config().max_allocation_bytes = saved;
  expect_error([] { Tensor::empty(DType::kFloat64, {int64_t{1} << 61}); }, Code::kResourceExhausted,
               {"float64"});
  expect_error(
      [] {
        Tensor::empty(DType::kFloat32, {int64_t{1} << 40, int64_t{1} << 40});
      },
      Code::kInvalidArgument, {"overflow"});
}

TEST(Tensor, HandlesAreCheapAndThreadSafeToShare) {
  Tensor t({1, 2, 3});
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([t] {
      for (int k = 0; k < 10000; ++k) {
        Tensor c = t;
        Tensor d = std::move(c);
        (void)d;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(t.impl()->refs.load(), 1);
}

TEST(Buffer, PoolReusesBlocksAndTracksBytes) {
  const auto before = allocator_stats();
  { Tensor t = Tensor::empty(DType::kFloat32, {100}); }
  { Tensor t = Tensor::empty(DType::kFloat32, {100}); }
  const auto after = allocator_stats();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_GE(after.pooled_hits, before.pooled_hits + 1);
  Tensor t = Tensor::empty(DType::kFloat32, {1000});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % Buffer::kAlignment, 0u);
  allocator_trim();
}

TEST(Buffer, WrapCallsRelease) {
  static float storage[4] = {1, 2, 3, 4};
  bool released = false;
  {
    Buffer* b = Buffer::wrap(storage, sizeof storage, [&] { released = true; });
    Tensor t = Tensor::from_buffer(b, 0, DType::kFloat32, {4});
    b->unref();
    EXPECT_EQ(t.at<float>({2}), 3.f);
  }
  EXPECT_TRUE(released);
}

TEST(Buffer, VersionsNameContents) {
  Tensor a = Tensor::empty(DType::kFloat32, {8});
  Tensor b = Tensor::empty(DType::kFloat32, {8});
  const uint64_t va = a.buffer()->version();
  EXPECT_NE(va, 0u);
  EXPECT_NE(va, b.buffer()->version());
  (void)a.data<float>();  // reads keep the version
  EXPECT_EQ(a.buffer()->version(), va);
  a.mutable_data<float>()[0] = 1;  // writes renew it
  const uint64_t va2 = a.buffer()->version();
  EXPECT_NE(va2, va);
  (void)a.mutable_raw_data();
  EXPECT_NE(a.buffer()->version(), va2);
  // A recycled block is new contents.
  const void* where = b.raw_data();
  const uint64_t vb = b.buffer()->version();
  b = Tensor();
  Tensor c = Tensor::empty(DType::kFloat32, {8});
  if (c.raw_data() == where) EXPECT_NE(c.buffer()->version(), vb);
  // Wrapped memory changes behind kiln's back: no version.
  static float storage[4] = {1, 2, 3, 4};
  Buffer* w = Buffer::wrap(storage, sizeof storage, [] {});
  Tensor t = Tensor::from_buffer(w, 0, DType::kFloat32, {4});
  w->unref();
  EXPECT_EQ(t.buffer()->version(), 0u);
  (void)t.mutable_raw_data();
  EXPECT_EQ(t.buffer()->version(), 0u);
  // Fixed wrapped memory (a SavedModel's mapped variables) has one version.
  static float fixed_storage[4] = {5, 6, 7, 8};
  Buffer* f = Buffer::wrap(
      fixed_storage, sizeof fixed_storage, [] {}, /*fixed=*/true);
  Tensor ft = Tensor::from_buffer(f, 0, DType::kFloat32, {4});
  f->unref();
  const uint64_t vf = ft.buffer()->version();
  EXPECT_NE(vf, 0u);
  (void)ft.data<float>();
  EXPECT_EQ(ft.buffer()->version(), vf);
}

}  // namespace
}  // namespace kiln
