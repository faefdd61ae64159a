// Internal: softmax rows for kernels that compute them beside other work
// (_FusedAttention's scores).
#pragma once
#include <cstdint>

namespace kiln::cpu {

/// Softmax of each of `rows` rows of `n` float32 values at `x`, in place, on
/// this thread (Softmax's row kernel: the same values).
void softmax_rows_in_place(float* x, int64_t rows, int64_t n);

}  // namespace kiln::cpu
