// Products on oneDNN's matmul primitive, one single-threaded primitive per
// block as matmul.cpp splits a product on kiln's pool; primitives are cached
// by sizes, strides and OpenMP threads.
// - float32: oneDNN's brgemm kernel where it has one (AVX-512 CPUs), for
//   sizes met before; elsewhere OpenBLAS (matmul.cpp). On a 2-core Xeon
//   (Sapphire Rapids) brgemm blocks take 0.76-0.96x OpenBLAS's time for a
//   transformer's products (docs/BENCHMARKS.md).
// - bfloat16: bf16 operands, float32 accumulation, the result rounded to
//   bf16 once. Where oneDNN has no bf16 kernel for a product (a CPU without
//   AVX512_BF16/AMX, or only its reference code for this layout), the block
//   runs in float32 on OpenBLAS. _FusedMatMul (matmul_float_weights)
//   multiplies by float32 weights packed to bf16 in the primitive's own
//   layout once per version of their buffer.
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "conv_util.h"
#include "gemm.h"
#include "kernel_util.h"
#include "kiln/half.h"
#include "packed_weights.h"
#include "threading.h"

namespace kiln::cpu {
namespace {

struct MatMulPrim {
  dnnl::matmul mm;
  dnnl::memory::desc a_md, b_md, c_md;
  size_t scratch_bytes = 0;
};

// Row-major [rows, cols] of `type` with row stride `ld`, or its transpose as stored.
dnnl::memory::desc strided_md(int64_t rows, int64_t cols, int64_t ld, bool transposed,
                              dnnl::memory::data_type type = dnnl::memory::data_type::bf16) {
  return transposed ? dnnl::memory::desc({rows, cols}, type, {1, ld})
                    : dnnl::memory::desc({rows, cols}, type, {ld, 1});
}

// Whether oneDNN has no kernel worth running for operands of `type`: only its
// reference code (far slower than float32), or for float32 no brgemm kernel
// (OpenBLAS is as fast as oneDNN's other float32 kernels).
bool no_kernel(const dnnl::matmul::primitive_desc& pd, dnnl::memory::data_type type) {
  const std::string impl = pd.impl_info_str();
  return impl.rfind("ref", 0) == 0 ||
         (type == dnnl::memory::data_type::f32 && impl.rfind("brg", 0) != 0);
}

// Runs `mm` on this thread: a (src), w (weights), c (dst), with user scratch
// and, when given, a bias.
void run_matmul(const dnnl::matmul& mm, const dnnl::memory& a, const dnnl::memory& w,
                const dnnl::memory& c, size_t scratch_bytes, const dnnl::memory* bias = nullptr) {
  dnnl::stream& s = dnnl_stream();
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, c}};
  if (bias) args.emplace(DNNL_ARG_BIAS, *bias);
  Tensor scratch;
  if (scratch_bytes) args.emplace(DNNL_ARG_SCRATCHPAD, dnnl_scratch_memory(scratch, scratch_bytes));
  mm.execute(s, args);
  s.wait();
}

template <typename T>
constexpr dnnl::memory::data_type kDnnlType =
    std::is_same_v<T, float> ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;

// Null where oneDNN has no kernel worth running (no_kernel). `f32_out`: a
// float32 C whatever the operands' type.
template <typename T>
std::shared_ptr<MatMulPrim> create_prim(const GemmCall<T>& g, bool f32_out = false) {
  constexpr auto type = kDnnlType<T>;
  auto p = std::make_shared<MatMulPrim>();
  p->a_md = strided_md(g.m, g.k, g.lda, g.ta, type);
  p->b_md = strided_md(g.k, g.n, g.ldb, g.tb, type);
  p->c_md = strided_md(g.m, g.n, g.ldc, false, f32_out ? dnnl::memory::data_type::f32 : type);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::matmul::desc d(p->a_md, p->b_md, p->c_md);
  const dnnl::matmul::primitive_desc pd(d, attr, dnnl_engine());
  if (no_kernel(pd, type)) return nullptr;
  p->scratch_bytes = pd.scratchpad_desc().get_size();
  p->mm = dnnl::matmul(pd);
  return p;
}

constexpr size_t kCacheSize = 512;
std::atomic<int64_t> f32_products{0}, f32_packed{0};

template <typename T>
ConvKey gemm_key(const GemmCall<T>& g) {
  ConvKey key{};
  key.geom = {g.ta, g.tb, g.m, g.n, g.k, g.lda, g.ldb, g.ldc, library_threads()};
  return key;
}

template <typename T>
std::shared_ptr<MatMulPrim> make_prim(const GemmCall<T>& g, bool f32_out = false) {
  try {
    return create_prim(g, f32_out);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

// bf16 operands; C bf16, or float32 with `f32_out` (a cache of its own).
std::shared_ptr<MatMulPrim> cached_prim(const Bf16Gemm& g, bool f32_out = false) {
  static auto& cache = *new PrimCache<MatMulPrim>(kCacheSize);
  static auto& f32_cache = *new PrimCache<MatMulPrim>(kCacheSize);
  return (f32_out ? f32_cache : cache).get(gemm_key(g), [&] { return make_prim(g, f32_out); });
}

// Float32 primitives are created on a product's second call (see
// f32_gemm_onednn).
std::shared_ptr<MatMulPrim> cached_prim(const GemmCall<float>& g) {
  static auto& cache = *new PrimCache<MatMulPrim>(kCacheSize);
  return cache.get_when_repeated(gemm_key(g), [&] { return make_prim(g); });
}

template <typename T, typename C = T>
void run_prim(const MatMulPrim& p, const GemmCall<T>& g, C* c) {
  const dnnl::engine& e = dnnl_engine();
  run_matmul(p.mm, dnnl::memory(p.a_md, e, const_cast<T*>(g.a)),
             dnnl::memory(p.b_md, e, const_cast<T*>(g.b)), dnnl::memory(p.c_md, e, c),
             p.scratch_bytes);
}
template <typename T>
void run_prim(const MatMulPrim& p, const GemmCall<T>& g) {
  run_prim(p, g, g.c);
}

// The block in float32: op(A), B to float, one OpenBLAS call, C rounded to
// bf16 (or kept float32: C = float).
template <typename C>
void gemm_in_float(const Bf16Gemm& g, C* out) {
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
    for (int64_t j = 0; j < g.n; ++j) {
      const float x = c[static_cast<size_t>(r * g.n + j)];
      if constexpr (std::is_same_v<C, float>)
        out[r * g.ldc + j] = x;
      else
        out[r * g.ldc + j] = to_bfloat16(x);
    }
}

// ---- _FusedMatMul: float32 weights packed to bf16 ----

// Rows [0, m) of x [m, k] (row stride k) times weights packed in the layout this
// primitive chose; `wei` holds the float32 weights' layout and packings.
struct PackedPrim {
  dnnl::matmul mm;
  dnnl::memory::desc a_md, c_md, bias_md;
  size_t scratch_bytes = 0;
  std::shared_ptr<WeightPacks> wei;
};

// What a packed product adds to its float32 sums before the one rounding.
struct ProductEpilogue {
  bool bias = false;  // a float32 [n] added to every row
  bool relu = false;  // then max(0, .)
};

// Operands of `type` (bf16 or f32) times float32 weights in the layout the
// primitive picks for `type`, with epilogue `ep`.
std::shared_ptr<PackedPrim> create_packed_prim(int64_t m, int64_t n, int64_t k, bool tb,
                                               dnnl::memory::data_type type, ProductEpilogue ep) {
  using dt = dnnl::memory::data_type;
  auto p = std::make_shared<PackedPrim>();
  p->a_md = strided_md(m, k, k, false, type);
  p->c_md = strided_md(m, n, n, false, type);
  const dnnl::memory::desc any_b({k, n}, type, dnnl::memory::format_tag::any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (ep.relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    attr.set_post_ops(ops);
  }
  if (ep.bias) p->bias_md = dnnl::memory::desc({1, n}, dt::f32, {n, 1});
  const dnnl::matmul::desc d = ep.bias ? dnnl::matmul::desc(p->a_md, any_b, p->bias_md, p->c_md)
                                       : dnnl::matmul::desc(p->a_md, any_b, p->c_md);
  const dnnl::matmul::primitive_desc pd(d, attr, dnnl_engine());
  if (no_kernel(pd, type)) return nullptr;
  p->scratch_bytes = pd.scratchpad_desc().get_size();
  p->mm = dnnl::matmul(pd);
  const dnnl::memory::desc user = tb ? dnnl::memory::desc({k, n}, dt::f32, {1, k})
                                     : dnnl::memory::desc({k, n}, dt::f32, {n, 1});
  p->wei = weight_packs(user, pd.weights_desc());
  return p;
}

std::shared_ptr<PackedPrim> cached_packed_prim(int64_t m, int64_t n, int64_t k, bool tb,
                                               dnnl::memory::data_type type,
                                               ProductEpilogue ep = {}) {
  static auto& cache = *new PrimCache<PackedPrim>(kCacheSize);
  ConvKey key{};
  key.geom = {
      type == dnnl::memory::data_type::f32, tb, m, n, k, library_threads(), ep.bias, ep.relu};
  auto make = [&]() -> std::shared_ptr<PackedPrim> {
    try {
      return create_packed_prim(m, n, k, tb, type, ep);
    } catch (const dnnl::error&) {
      return nullptr;
    }
  };
  // bf16: _FusedMatMul's weights are a variable's; float32: created on a
  // block size's second call, as unpacked ones.
  return type == dnnl::memory::data_type::f32 ? cache.get_when_repeated(key, make)
                                              : cache.get(key, make);
}

// x [m, k] (bf16) times the float32 weights `y` as rows blocks on kiln's pool, the
// weights packed once per version, plus `bias` (float32 [n], or null) and a
// relu when `ep` says so; false (nothing written) where oneDNN has no such
// primitive or the blocks' packed layouts disagree.
bool packed_product(const BFloat16* x, const Tensor& y, bool tb, int64_t m, int64_t n, int64_t k,
                    BFloat16* out, const float* bias, ProductEpilogue ep) {
  if (!bf16_gemm_native()) return false;
  // MatMul's row blocks; where it would split the columns (few rows, wide
  // weights: a classifier head over a batch), rows all the same, one block per
  // thread, each reading all the packed weights: that costs less than rounding
  // the float32 weights on every call, however large they are (b_bytes 0; a
  // Dense(1000) over [32, 1280]: 659 -> 210 us). A small product: one block.
  const int64_t want = std::max<int64_t>(1, gemm_kernel_row_blocks(m, n, k, 0, 0));
  const int64_t step = (m + want - 1) / want;
  const int64_t blocks = (m + step - 1) / step, last = m - (blocks - 1) * step;  // last > 0
  LibrariesSingleThreaded single;  // primitives for one thread each
  const std::shared_ptr<PackedPrim> full =
      cached_packed_prim(step, n, k, tb, dnnl::memory::data_type::bf16, ep);
  const std::shared_ptr<PackedPrim> tail =
      last == step ? full : cached_packed_prim(last, n, k, tb, dnnl::memory::data_type::bf16, ep);
  if (!full || !tail || full->wei->md != tail->wei->md) return false;
  Tensor holder;
  std::shared_ptr<const PackedWeights> packed;
  const dnnl::memory wei = packed_weights(full->wei, filter_ref(y), holder, packed);
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    LibrariesSingleThreaded task_single;
    const dnnl::engine& e = dnnl_engine();
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = b * step;
      const PackedPrim& p = b == blocks - 1 ? *tail : *full;
      const dnnl::memory bias_mem =
          ep.bias ? dnnl::memory(p.bias_md, e, const_cast<float*>(bias)) : dnnl::memory();
      run_matmul(p.mm, dnnl::memory(p.a_md, e, const_cast<BFloat16*>(x + r0 * k)), wei,
                 dnnl::memory(p.c_md, e, out + r0 * n), p.scratch_bytes,
                 ep.bias ? &bias_mem : nullptr);
    }
  });
  return true;
}

// Elsewhere (no bf16 kernel, a transposed x, a oneDNN error): the weights
// rounded to bf16 here, then MatMul's bf16 product; with an epilogue or no
// bf16 kernels, the product of the same values in float32 (as MatMul's
// bf16_matmul computes it there: the same sums), the epilogue, one rounding.
void fused_matmul_elsewhere(const Tensor& x, const Tensor& y, bool ta, bool tb, int64_t m,
                            int64_t n, int64_t k, const float* bias, ProductEpilogue ep,
                            Tensor& out) {
  Tensor yb = Tensor::empty(DType::kBFloat16, y.shape());
  round_to_half(y.data<float>(), yb);
  if (!ep.bias && !ep.relu && bf16_gemm_native()) {
    gemm_product<BFloat16>({ta, tb, m, n, k, x.data<BFloat16>(), yb.data<BFloat16>()},
                           out.mutable_data<BFloat16>());
    return;
  }
  const Tensor xf = as_float32(x, "_FusedMatMul"), yf = as_float32(yb, "_FusedMatMul");
  Tensor sums = Tensor::empty(DType::kFloat32, Shape({m, n}));
  float* c = sums.mutable_data<float>();
  gemm_product<float>({ta, tb, m, n, k, xf.data<float>(), yf.data<float>()}, c);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float v = c[i * n + j] + (ep.bias ? bias[j] : 0.f);
      c[i * n + j] = ep.relu ? std::max(v, 0.f) : v;
    }
  round_to_half(c, out);
}

// _FusedMatMul: x bf16 [..., m, k] (leading dims folded into rows; rank 2 when
// adj_x) times float32 y [k, n] ([n, k] when adj_y), plus the optional bias
// (float32 [n]) and attr activation ("relu").
void fused_matmul_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& y = c.input(1);
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  const bool ta = c.attr_bool("adj_x"), tb = c.attr_bool("adj_y");
  const int64_t k = tb ? y.dim(1) : y.dim(0), n = tb ? y.dim(0) : y.dim(1);
  const int64_t m = out.num_elements() / n;
  const float* bias = c.num_inputs() > 2 ? c.input(2).data<float>() : nullptr;
  const ProductEpilogue ep{bias != nullptr, c.attr_string("activation") == "relu"};
  BFloat16* o = out.mutable_data<BFloat16>();
  if (k == 0 && !ep.bias) {
    std::fill(o, o + out.num_elements(), BFloat16{});
    return;
  }
  try {
    if (!ta && k > 0 && packed_product(x.data<BFloat16>(), y, tb, m, n, k, o, bias, ep)) return;
  } catch (const dnnl::error&) {
  }
  fused_matmul_elsewhere(x, y, ta, tb, m, n, k, bias, ep, out);
}

}  // namespace

void bind_fused_matmul_kernel(OpTableBuilder& t) {
  t.kernel(OpId::FusedMatMul, fused_matmul_kernel);
}

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
    gemm_in_float(g, g.c);
    return;
  }
  run_prim(*p, g);
}

void bf16_gemm_call_f32(const Bf16Gemm& g, float* c) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) {
    for (int64_t r = 0; r < g.m; ++r) std::fill(c + r * g.ldc, c + r * g.ldc + g.n, 0.f);
    return;
  }
  const std::shared_ptr<MatMulPrim> p = cached_prim(g, true);
  if (!p) {
    gemm_in_float(g, c);
    return;
  }
  run_prim(*p, g, c);
}

// g times its weights packed (kept per version `b_version` of their buffer);
// false where oneDNN has no such primitive (yet) or the operands are strided.
bool f32_packed_call(const GemmCall<float>& g, uint64_t b_version) {
  if (g.ta || g.lda != g.k || g.ldc != g.n || g.ldb != (g.tb ? g.k : g.n)) return false;
  const std::shared_ptr<PackedPrim> p =
      cached_packed_prim(g.m, g.n, g.k, g.tb, dnnl::memory::data_type::f32);
  if (!p) return false;
  Tensor holder;
  std::shared_ptr<const PackedWeights> packed;
  const FilterRef ref{reinterpret_cast<const char*>(g.b), static_cast<size_t>(g.k * g.n) * 4,
                      b_version};
  const dnnl::memory wei = packed_weights(p->wei, ref, holder, packed);
  const dnnl::engine& e = dnnl_engine();
  run_matmul(p->mm, dnnl::memory(p->a_md, e, const_cast<float*>(g.a)), wei,
             dnnl::memory(p->c_md, e, g.c), p->scratch_bytes);
  return true;
}

bool f32_gemm_onednn(const GemmCall<float>& g, uint64_t b_version) {
  if (g.m == 0 || g.n == 0 || g.k == 0 || !f32_gemm_native()) return false;
  LibrariesSingleThreaded single;
  // A oneDNN error leaves the block to OpenBLAS, which writes all of C.
  try {
    if (b_version && f32_packed_call(g, b_version)) {
      f32_products.fetch_add(1, std::memory_order_relaxed);
      f32_packed.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  } catch (const dnnl::error&) {
  }
  const std::shared_ptr<MatMulPrim> p = cached_prim(g);
  if (!p) return false;
  try {
    run_prim(*p, g);
  } catch (const dnnl::error&) {
    return false;
  }
  f32_products.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool f32_gemm_native() {
  static const bool native = [] {
    LibrariesSingleThreaded single;
    float a[64 * 64] = {}, c[64 * 64] = {};
    return make_prim(GemmCall<float>{false, false, 64, 64, 64, a, 64, a, 64, c, 64}) != nullptr;
  }();
  return native;
}

int64_t onednn_f32_products() {
  return f32_products.load();
}

int64_t onednn_f32_packed_products() {
  return f32_packed.load();
}

uint64_t gemm_packable_b(const Tensor& b, int64_t m, int64_t n, int64_t k) {
  if (b.dtype() != DType::kFloat32 || !f32_gemm_native() ||
      static_cast<double>(m) * n * k < kMinOneDnnMacs)
    return 0;
  const uint64_t v = b.buffer()->version();
  return v && weights_seen_before(b.raw_data(), v) ? v : 0;
}

}  // namespace kiln::cpu
