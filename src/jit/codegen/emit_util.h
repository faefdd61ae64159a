// Pieces of C++ text the JIT's emitters share (emit_cpp.cpp writes
// elementwise kernels, emit_rows.cpp row kernels with reductions).
#pragma once
#include <string>

#include "jit/ir/jit_ir.h"

namespace kiln::jit::detail {

/// The C++ type of a value of `dt`.
const char* ctype(DType dt);
/// The C++ type of `dt` in memory (pointers, buffers): bools as uint8_t
/// bytes, which GCC vectorizes loads and stores of (not of bool).
const char* mtype(DType dt);
/// The C++ name of value x ("v12"; "n12" with prefix "n").
std::string v(int32_t x, const char* prefix = "v");
/// The constant of `dt` whose bit pattern is `bits`, as a C++ expression.
std::string literal(DType dt, uint64_t bits);
/// The scalar functor of an op row ("kiln::fn::Exp{}").
std::string functor(OpId op);
/// Whether instruction i of `k` calls its unit's vector function for its op
/// (vector_functions_text) instead of the functor inlined.
bool outlined(const Kernel& k, size_t i);
/// The unit's vector function for instruction `in` ("kiln_v_Tanh_f32").
std::string outlined_name(const Instr& in);
/// The vector functions the kernels call (outlined), each once.
std::string vector_functions_text(const std::vector<Kernel>& kernels);
/// "const T vI = ...;" for instruction i (not a load or a reduction), its
/// value and operands named with `prefix`.
std::string statement(const Kernel& k, size_t i, const char* prefix = "v");
/// The kernel function's opening: its signature, input and output pointers.
std::string signature_text(const Kernel& k);
/// Row r0's index and input offsets o<k>, and the step to the next row.
std::string row_start_text(size_t n_in);
std::string row_step_text(size_t n_in);

/// The text of a kernel with reductions (Kernel::reduced > 0).
std::string row_kernel_text(const Kernel& k);

}  // namespace kiln::jit::detail
