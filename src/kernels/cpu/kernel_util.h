// Helpers shared by the CPU kernels: typed dispatch on dtype and broadcast
// strides. Elementwise maps live in elementwise_util.h.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/config.h"
#include "kiln/op.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {

/// Calls f(T{}) for the C++ type of a numeric or bool dtype; throws
/// InvalidArgumentError naming `op` for other dtypes.
template <typename F>
void visit_numeric(DType dt, const char* op, F&& f) {
  switch (dt) {
    case DType::kBool: f(bool{}); return;
    case DType::kInt8: f(int8_t{}); return;
    case DType::kUInt8: f(uint8_t{}); return;
    case DType::kInt32: f(int32_t{}); return;
    case DType::kInt64: f(int64_t{}); return;
    case DType::kFloat32: f(float{}); return;
    case DType::kFloat64: f(double{}); return;
    default: throw InvalidArgumentError(str_cat(op, ": unsupported dtype ", dtype_name(dt)));
  }
}

/// The elements of an int32 or int64 tensor as int64 (shape arguments).
std::vector<int64_t> int_values(const Tensor& t);
/// The same, stored inline for up to 8 values (slice specs, permutations).
SmallVec<int64_t, 8> int_list(const Tensor& t);

/// Strides of `in` broadcast to `out` (0 on broadcast dims), right-aligned.
SmallVec<int64_t, 6> broadcast_strides(const Shape& in, const Shape& out);

/// Kernels that write whole rows (softmax, the JIT's row kernels) write
/// outputs of at least this many bytes in all with non-temporal stores (no
/// read for ownership, nothing left in cache): 8 MB, or half the last-level
/// cache when the system reports a larger one.
size_t stream_bytes();
/// Sets stream_bytes() (0: back to the default); for tests.
void set_stream_bytes_for_tests(size_t bytes);

/// x (any plain dtype or a 16-bit float) as float32 (x itself when float32);
/// `op` names the op in a dtype error (select_cast.cpp).
Tensor as_float32(const Tensor& x, const char* op);
/// Rounds float32 values into `out`, a float16 or bfloat16 tensor of as many
/// elements (nearest, ties to even; select_cast.cpp).
void round_to_half(const float* in, Tensor& out);

}  // namespace kiln::cpu
