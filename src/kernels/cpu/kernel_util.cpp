#include "kernel_util.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "conv_util.h"
#include "gemm.h"
#include "kiln/config.h"

namespace kiln::cpu {

namespace {
constexpr size_t kStreamBytes = 8 << 20;
std::atomic<size_t> g_stream_bytes{0};  // 0: the default

// A host whose L3 holds the rows (a VM reporting 480 MB) lost time streaming
// them (layer norm [4096, 1024] under jit: 1.01 ms streamed, 0.73 ms not).
size_t default_stream_bytes() {
  const long llc = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
  return std::max<size_t>(kStreamBytes, llc > 0 ? static_cast<size_t>(llc) / 2 : 0);
}

template <typename Out>
Out ints_of(const Tensor& t) {
  const int64_t n = t.num_elements();
  Out out(static_cast<size_t>(n));
  if (t.dtype() == DType::kInt32)
    std::copy_n(t.data<int32_t>(), n, out.data());
  else
    std::copy_n(t.data<int64_t>(), n, out.data());
  return out;
}
}  // namespace

std::vector<int64_t> int_values(const Tensor& t) {
  return ints_of<std::vector<int64_t>>(t);
}

SmallVec<int64_t, 8> int_list(const Tensor& t) {
  return ints_of<SmallVec<int64_t, 8>>(t);
}

SmallVec<int64_t, 6> broadcast_strides(const Shape& in, const Shape& out) {
  const int64_t r = out.rank(), ri = in.rank();
  SmallVec<int64_t, 6> st(static_cast<size_t>(r), 0);
  int64_t acc = 1;
  for (int64_t d = ri - 1; d >= 0; --d) {
    const int64_t od = d + (r - ri);
    st[static_cast<size_t>(od)] = in.dim(d) == 1 ? 0 : acc;
    acc *= in.dim(d);
  }
  return st;
}

size_t stream_bytes() {
  static const size_t fallback = default_stream_bytes();
  const size_t set = g_stream_bytes.load(std::memory_order_relaxed);
  return set ? set : fallback;
}

void set_stream_bytes_for_tests(size_t bytes) {
  g_stream_bytes.store(bytes, std::memory_order_relaxed);
}

}  // namespace kiln::cpu

namespace kiln {

CpuKernels cpu_kernels() {
  CpuKernels k;
  k.winograd = cpu::winograd_available();
  k.bf16_products = cpu::bf16_gemm_native();
  k.bf16_convolutions = cpu::conv_bf16_native();
  k.f32_onednn_products = cpu::f32_gemm_native();
  return k;
}

}  // namespace kiln
