// Internal: the float products MatMul runs (oneDNN or OpenBLAS), for the JIT runtime,
// which computes a product inside the kernel that reads it (jit::Product).
// Row-major, op(A) [m, k] x op(B) [k, n] -> C [m, n], op transposing when set.
#pragma once
#include <cstdint>

#include "kiln/half.h"
#include "kiln/tensor.h"

namespace kiln::cpu {

/// A product's sizes and operands: A stored [m, k] ([k, m] when ta), B
/// stored [k, n] ([n, k] when tb).
template <typename T>
struct GemmArgs {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  const T* a = nullptr;
  const T* b = nullptr;
  /// float32: B's buffer version when its blocks may read B packed
  /// (gemm_packable_b); 0: never.
  uint64_t b_version = 0;
};

/// All of C, split on kiln's pool as MatMul splits it.
template <typename T>
void gemm_product(const GemmArgs<T>& g, T* c);
/// `batches` products stacked: product i reads g.a + i * a_step and
/// g.b + i * b_step and writes c + i * m * n; run as MatMul runs a batch.
template <typename T>
void gemm_batches(const GemmArgs<T>& g, int64_t batches, int64_t a_step, int64_t b_step, T* c);
/// Rows [r0, r1) of C, one single-threaded call, into `c` (row r0's storage;
/// rows n apart).
template <typename T>
void gemm_product_rows(const GemmArgs<T>& g, int64_t r0, int64_t r1, T* c);
/// The number of blocks of C's rows MatMul would split this product into on
/// the pool; 0 when it would run one call or split C's columns.
int64_t gemm_row_blocks(int64_t m, int64_t n, int64_t k);
/// The blocks of C's rows a kernel computing the product beside its own work
/// (`kernel_work`, in multiply-adds) splits it into (jit::Product): MatMul's
/// split of the product and that work together, its row blocks, or, where it
/// would split C's columns of a product whose B (`b_bytes`) stays in cache,
/// blocks of at least 8 rows (each block then runs the kernel over its rows
/// too: an LSTM step's [32, 256] gates, a GRU's [32, 192]); 0 for one call.
/// b_bytes 0: no bound (_FusedMatMul's packed weights, read by every block).
int64_t gemm_kernel_row_blocks(int64_t m, int64_t n, int64_t k, int64_t b_bytes,
                               int64_t kernel_work);
/// Whether the BLAS backend takes these sizes (each fits its index type).
bool gemm_fits(int64_t m, int64_t n, int64_t k);

/// One product C[m, n] = op(A) op(B) of T, row-major with leading
/// dimensions as stored (A [k, m] when ta, B [n, k] when tb).
template <typename T>
struct GemmCall {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  const T* a = nullptr;
  int64_t lda = 0;
  const T* b = nullptr;
  int64_t ldb = 0;
  T* c = nullptr;
  int64_t ldc = 0;
};
using Bf16Gemm = GemmCall<BFloat16>;
/// Runs the float32 product `g` on this thread as a task of a batch spread
/// over the pool runs it: oneDNN's brgemm kernel from 2^19 multiply-adds
/// (A not transposed), else OpenBLAS.
void f32_gemm_call(const GemmCall<float>& g);
/// Runs `g` on this thread (matmul_onednn.cpp): oneDNN's bf16 kernel with float32
/// accumulation, or float32 on OpenBLAS where oneDNN has none for it.
void bf16_gemm_call(const Bf16Gemm& g);
/// As bf16_gemm_call, but C is float32 (`c`, rows g.ldc apart; g.c unused):
/// the accumulated sums unrounded (_FusedAttention's scores).
void bf16_gemm_call_f32(const Bf16Gemm& g, float* c);
/// Runs the float32 product `g` on this thread with oneDNN's brgemm kernel
/// (matmul_onednn.cpp) when oneDNN has one for it and these sizes were met
/// before (a primitive costs ~0.2 ms to create); false, nothing written,
/// leaves it to OpenBLAS.
/// With `b_version` (gemm_packable_b), B is read from a packing kept for
/// that version of its buffer.
bool f32_gemm_onednn(const GemmCall<float>& g, uint64_t b_version);
/// Float32 products of at least this many multiply-adds (per call) run on
/// oneDNN, unless A is transposed: smaller ones and op(A) = A^T gained
/// nothing, an attention's [128, 128] x [128, 64] lost 1.4x.
inline constexpr int64_t kMinOneDnnMacs = 1 << 21;
/// The version of float32 B's buffer when a product of these sizes may read B
/// packed: oneDNN's kernel would run it and B was seen at this version in an
/// earlier call (weights that stay); else 0.
uint64_t gemm_packable_b(const Tensor& b, int64_t m, int64_t n, int64_t k);
/// Whether oneDNN has a brgemm float32 kernel on this CPU (AVX-512).
bool f32_gemm_native();
/// Float32 products (calls) run on oneDNN so far (for tests).
int64_t onednn_f32_products();
/// Of those, the ones that read B packed (for tests).
int64_t onednn_f32_packed_products();
/// Whether oneDNN has bf16 kernels on this CPU (else MatMul computes bf16 in
/// float32 copies).
bool bf16_gemm_native();

}  // namespace kiln::cpu
