// bfloat16 convolutions on a CPU without oneDNN bf16 kernels: oneDNN is held
// to AVX2 (ONEDNN_MAX_CPU_ISA, set before its first use), so the kernel falls
// back to float32 copies and rounds the output; same cases and reference as
// conv_bf16_test.cpp.
#include <cstdlib>
#include <string>
#include <vector>

#include "conv_bf16_util.h"
#include "kernels/cpu/conv_util.h"
#include "kiln/context.h"

namespace kiln {
namespace {
const bool kAvx2Only = (setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1),
                        setenv("DNNL_MAX_CPU_ISA", "AVX2", 1), config().num_threads = 4, true);

TEST(ConvBFloat16Fallback, MatchesTheReferenceInEverySplit) {
  for (const testing::Bf16Case& p : testing::bf16_cases()) {
    SCOPED_TRACE(testing::bf16_case_name(p));
    testing::check_bf16_conv(p);
  }
}

TEST(ConvBFloat16Fallback, FusedEpiloguesMatchTheReferenceInEverySplit) {
  ASSERT_FALSE(cpu::conv_bf16_native());  // the float32 path, epilogue fused there
  for (const testing::Bf16Case& p : testing::bf16_cases())
    for (const testing::Bf16Epilogue& e : testing::bf16_epilogues()) {
      SCOPED_TRACE(str_cat(testing::bf16_case_name(p), " ", e.ops.size(), " steps from ", e.ops[0],
                           e.f32_filter ? ", float32 filter" : ""));
      testing::check_bf16_fused_conv(p, e);
    }
}

TEST(ConvBFloat16Fallback, GradientsMatchTheReferenceInEverySplit) {
  for (const testing::Bf16Case& p : testing::bf16_cases()) {
    SCOPED_TRACE(testing::bf16_case_name(p));
    testing::check_bf16_conv_backprop(p);
  }
}

// conv_float_filters' form (a bf16 input, the float32 filter): the filter is
// rounded and packed on its first call only, and a write to it is seen.
TEST(ConvBFloat16Fallback, AFloat32FilterIsRoundedAndPackedOnce) {
  const testing::Bf16Case p{1, 9, 9, 8, 3, 16, false, "SAME"};
  const Tensor x = cast(testing::bf16_wave({p.n, p.h, p.w, p.c}, 0.7), DType::kBFloat16);
  Tensor f = testing::bf16_wave({p.k, p.k, p.c, p.out}, 1.3);
  const Attrs attrs = {
      std::vector<int64_t>{1, 1}, p.padding, std::vector<int64_t>{1, 1}, std::string(), 0.0, 6.0};
  auto run = [&] {
    return cast(call_op1(OpId::FusedConv2D, std::vector<Tensor>{x, f}, attrs), DType::kFloat32);
  };
  auto want = [&] {  // the Cast filter's result
    return cast(conv2d(x, cast(f, DType::kBFloat16), {1, 1}, p.padding), DType::kFloat32);
  };
  // Filters packed by one call of `fn`.
  auto reorders = [](const auto& fn) {
    const int64_t before = cpu::filter_reorders();
    fn();
    return cpu::filter_reorders() - before;
  };
  EXPECT_GT(reorders([&] { EXPECT_EQ(run().to_vector<float>(), want().to_vector<float>()); }), 0);
  const std::vector<float> again = want().to_vector<float>();
  EXPECT_EQ(reorders([&] { EXPECT_EQ(run().to_vector<float>(), again); }), 0);  // kept
  float* w = f.mutable_data<float>();  // written in place: a new version
  for (int64_t i = 0; i < f.num_elements(); ++i) w[i] = -2.f * w[i];
  const std::vector<float> changed = want().to_vector<float>();
  EXPECT_GT(reorders([&] { EXPECT_EQ(run().to_vector<float>(), changed); }), 0);
}

}  // namespace
}  // namespace kiln
