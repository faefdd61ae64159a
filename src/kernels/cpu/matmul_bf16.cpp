// bfloat16 products for MatMul on oneDNN's matmul primitive (bf16 operands,
// float32 accumulation, the result rounded to bf16 once), one single-threaded
// primitive per block as matmul.cpp splits the product on kiln's pool.
// Primitives are cached by sizes, strides and OpenMP threads. Where oneDNN
// has no bf16 kernel for a product (a CPU without AVX512_BF16/AMX, or only
// its reference code for this layout), the block runs in float32 on OpenBLAS.
#include <cblas.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "conv_util.h"
#include "gemm.h"
#include "kiln/half.h"
#include "threading.h"

namespace kiln::cpu {
namespace {

struct MatMulPrim {
  dnnl::matmul mm;
  dnnl::memory::desc a_md, b_md, c_md;
  size_t scratch_bytes = 0;
};

// Row-major [rows, cols] with row stride `ld`, or its transpose as stored.
dnnl::memory::desc strided_md(int64_t rows, int64_t cols, int64_t ld, bool transposed) {
  using dt = dnnl::memory::data_type;
  return transposed ? dnnl::memory::desc({rows, cols}, dt::bf16, {1, ld})
                    : dnnl::memory::desc({rows, cols}, dt::bf16, {ld, 1});
}

// Null when oneDNN offers only its reference code (far slower than float32).
std::shared_ptr<MatMulPrim> create_prim(const Bf16Gemm& g) {
  auto p = std::make_shared<MatMulPrim>();
  p->a_md = strided_md(g.m, g.k, g.lda, g.ta);
  p->b_md = strided_md(g.k, g.n, g.ldb, g.tb);
  p->c_md = strided_md(g.m, g.n, g.ldc, false);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::matmul::desc d(p->a_md, p->b_md, p->c_md);
  const dnnl::matmul::primitive_desc pd(d, attr, dnnl_engine());
  if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return nullptr;
  p->scratch_bytes = pd.scratchpad_desc().get_size();
  p->mm = dnnl::matmul(pd);
  return p;
}

constexpr size_t kCacheSize = 512;

std::shared_ptr<MatMulPrim> cached_prim(const Bf16Gemm& g) {
  static auto& cache = *new PrimCache<MatMulPrim>(kCacheSize);
  ConvKey key{};
  key.geom = {g.ta, g.tb, g.m, g.n, g.k, g.lda, g.ldb, g.ldc, library_threads()};
  return cache.get(key, [&]() -> std::shared_ptr<MatMulPrim> {
    try {
      return create_prim(g);
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
}

// The block in float32: op(A), B to float, one OpenBLAS call, C rounded.
void gemm_in_float(const Bf16Gemm& g) {
  std::vector<float> a(static_cast<size_t>(g.m * g.k)), b(static_cast<size_t>(g.k * g.n));
  std::vector<float> c(static_cast<size_t>(g.m * g.n));
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.k; ++j)
      a[static_cast<size_t>(i * g.k + j)] =
          to_float(g.ta ? g.a[j * g.lda + i] : g.a[i * g.lda + j]);
  for (int64_t i = 0; i < g.k; ++i)
    for (int64_t j = 0; j < g.n; ++j)
      b[static_cast<size_t>(i * g.n + j)] =
          to_float(g.tb ? g.b[j * g.ldb + i] : g.b[i * g.ldb + j]);
  openblas_single_threaded();
  const auto i = [](int64_t v) { return static_cast<blasint>(v); };
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, i(g.m), i(g.n), i(g.k), 1.f, a.data(),
              i(g.k), b.data(), i(g.n), 0.f, c.data(), i(g.n));
  for (int64_t r = 0; r < g.m; ++r)
    for (int64_t j = 0; j < g.n; ++j)
      g.c[r * g.ldc + j] = to_bfloat16(c[static_cast<size_t>(r * g.n + j)]);
}

}  // namespace

bool bf16_gemm_native() {
  static const bool native = [] {
    LibrariesSingleThreaded single;
    BFloat16 a[16 * 16] = {}, c[16 * 16] = {};
    return cached_prim(Bf16Gemm{false, false, 16, 16, 16, a, 16, a, 16, c, 16}) != nullptr;
  }();
  return native;
}

void bf16_gemm_call(const Bf16Gemm& g) {
  if (g.m == 0 || g.n == 0) return;
  const std::shared_ptr<MatMulPrim> p = g.k > 0 ? cached_prim(g) : nullptr;
  if (!p) {
    gemm_in_float(g);
    return;
  }
  dnnl::stream& s = dnnl_stream();
  const dnnl::engine& e = dnnl_engine();
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, dnnl::memory(p->a_md, e, const_cast<BFloat16*>(g.a))},
      {DNNL_ARG_WEIGHTS, dnnl::memory(p->b_md, e, const_cast<BFloat16*>(g.b))},
      {DNNL_ARG_DST, dnnl::memory(p->c_md, e, g.c)}};
  Tensor scratch;
  if (p->scratch_bytes)
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl_scratch_memory(scratch, p->scratch_bytes));
  p->mm.execute(s, args);
  s.wait();
}

}  // namespace kiln::cpu
