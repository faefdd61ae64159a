// Internal: one binder per kernel family file.
#pragma once
#include "functors.h"
#include "kiln/op.h"

namespace kiln {
/// Sets cpu_kernel (and block kernels) on every row (bind.cpp).
void bind_cpu_kernels(OpTableBuilder& t);
}  // namespace kiln

namespace kiln::cpu {
void bind_creation_kernels(OpTableBuilder& t);
void bind_unary_kernels(OpTableBuilder& t);
void bind_binary_kernels(OpTableBuilder& t);
void bind_select_cast_kernels(OpTableBuilder& t);
void bind_shape_kernels(OpTableBuilder& t);
void bind_reduce_kernels(OpTableBuilder& t);
void bind_selection_kernels(OpTableBuilder& t);
void bind_linalg_kernels(OpTableBuilder& t);
void bind_image_kernels(OpTableBuilder& t);
void bind_string_kernels(OpTableBuilder& t);
void bind_unicode_kernels(OpTableBuilder& t);
void bind_decode_raw_kernels(OpTableBuilder& t);
void bind_complex_kernels(OpTableBuilder& t);
void bind_nn_kernels(OpTableBuilder& t);
void bind_state_kernels(OpTableBuilder& t);
void bind_graph_kernels(OpTableBuilder& t);
void bind_control_flow_kernels(OpTableBuilder& t);
void bind_fused_kernels(OpTableBuilder& t);
void bind_collective_kernels(OpTableBuilder& t);
}  // namespace kiln::cpu

namespace kiln::cpu {
/// The cost in compiled code of functor F over operands of dtype `dt`
/// (fn::cost_of; OpDef::jit_cost): bound next to F's kernel.
template <typename F>
int functor_cost(DType dt) {
  switch (dt) {
    case DType::kBool: return fn::cost_of<F, bool>();
    case DType::kInt8: return fn::cost_of<F, int8_t>();
    case DType::kUInt8: return fn::cost_of<F, uint8_t>();
    case DType::kInt32: return fn::cost_of<F, int32_t>();
    case DType::kInt64: return fn::cost_of<F, int64_t>();
    case DType::kFloat64: return fn::cost_of<F, double>();
    case DType::kComplex64: return fn::cost_of<F, fn::complex_t<float>>();
    case DType::kComplex128: return fn::cost_of<F, fn::complex_t<double>>();
    default: return fn::cost_of<F, float>();  // float32 (halves compute in float32)
  }
}
}  // namespace kiln::cpu
