// bfloat16 convolutions on a CPU without oneDNN bf16 kernels: oneDNN is held
// to AVX2 (ONEDNN_MAX_CPU_ISA, set before its first use), so the kernel falls
// back to float32 copies and rounds the output; same cases and reference as
// conv_bf16_test.cpp.
#include <cstdlib>

#include "conv_bf16_util.h"
#include "kernels/cpu/conv_util.h"

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

}  // namespace
}  // namespace kiln
