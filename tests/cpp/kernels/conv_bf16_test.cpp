// bfloat16 convolutions run natively (kNativeBFloat16: oneDNN's bf16 kernels,
// float32 accumulation) against a float64 reference of the same bf16 values,
// eagerly and traced (no casts recorded), in every way the kernel splits them;
// float16 still computes in float32 between casts.
#include <cmath>
#include <string>
#include <vector>

#include "conv_bf16_util.h"

namespace kiln {
namespace {
// A budget of 4 threads (before the pool starts), so the large cases run as
// row or channel blocks on any machine.
const bool kFourThreads = (config().num_threads = 4, true);

TEST(ConvBFloat16, MatchesTheReferenceInEverySplit) {
  for (const testing::Bf16Case& p : testing::bf16_cases()) {
    SCOPED_TRACE(testing::bf16_case_name(p));
    testing::check_bf16_conv(p);
  }
}

TEST(ConvBFloat16, FusedEpiloguesMatchTheReferenceInEverySplit) {
  for (const testing::Bf16Case& p : testing::bf16_cases())
    for (const testing::Bf16Epilogue& e : testing::bf16_epilogues()) {
      SCOPED_TRACE(str_cat(testing::bf16_case_name(p), " ", e.ops.size(), " steps from ", e.ops[0],
                           e.f32_filter ? ", float32 filter" : ""));
      testing::check_bf16_fused_conv(p, e);
    }
}

TEST(ConvBFloat16, GradientsMatchTheReferenceInEverySplit) {
  for (const testing::Bf16Case& p : testing::bf16_cases()) {
    SCOPED_TRACE(testing::bf16_case_name(p));
    testing::check_bf16_conv_backprop(p);
  }
}

TEST(ConvBFloat16, TracedWithoutCasts) {
  const testing::Bf16Case p{1, 9, 9, 8, 3, 16, false, "SAME"};
  const Tensor x = testing::bf16_wave({p.n, p.h, p.w, p.c}, 0.7);
  const Tensor f = testing::bf16_wave({p.k, p.k, p.c, p.out}, 1.3);
  for (DType half : {DType::kBFloat16, DType::kFloat16}) {
    SCOPED_TRACE(dtype_name(half));
    const Tensor xh = cast(x, half), fh = cast(f, half);
    Graph g("f");
    {
      TracingContext tc(g);
      ContextScope scope(tc);
      const Tensor a = tc.add_input("x", half, xh.shape());
      const Tensor b = tc.add_input("f", half, fh.shape());
      g.outputs().push_back(tc.edge_for(conv2d(a, b, {1, 1}, "SAME")));
    }
    int casts = 0, convs = 0;
    for (const auto& n : g.nodes()) {
      casts += n->op().id == OpId::Cast;
      convs += n->op().id == OpId::Conv2D;
    }
    EXPECT_EQ(convs, 1);
    // bfloat16 runs on the convolution's own kernel; float16 in float32.
    EXPECT_EQ(casts, half == DType::kBFloat16 ? 0 : 3);
    const std::vector<Tensor> got = Plan::compile(g)->run(std::vector<Tensor>{xh, fh});
    const Tensor eager = conv2d(xh, fh, {1, 1}, "SAME");
    ASSERT_EQ(got[0].dtype(), half);
    EXPECT_EQ(cast(got[0], DType::kFloat32).to_vector<float>(),
              cast(eager, DType::kFloat32).to_vector<float>());
  }
}

TEST(ConvBFloat16, DtypesMustMatch) {
  const Tensor x = cast(testing::bf16_wave({1, 4, 4, 2}, 0.3), DType::kBFloat16);
  const Tensor f = testing::bf16_wave({3, 3, 2, 3}, 0.5);  // float32
  testing::expect_error(
      [&] {
        conv2d(x, f, {1, 1}, "SAME");
      },
      Code::kInvalidArgument, {"Conv2D", "dtype mismatch"});
}

}  // namespace
}  // namespace kiln
