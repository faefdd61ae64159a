// The eager context: inference, then the kernel, now (dispatch itself is
// src/ops/dispatch.cpp).
#include "kiln/context.h"

#include <cmath>

#include "core/denormal.h"
#include "kiln/config.h"
#include "kiln/profiler.h"

namespace kiln {
namespace {

// Inference, then the kernel into the outputs make_outputs(n) provides: the
// one path shared by run_kernel (vector outputs) and the single-output fast
// path (an inline tensor).
template <typename MakeOutputs>
void infer_and_run(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                   MakeOutputs make_outputs) {
  check_op_inputs(op, inputs);
  InferContext ic(op, inputs, attrs);
  op.infer(ic);
  if (!op.cpu_kernel) throw UnimplementedError(str_cat(op.type_name, ": no CPU kernel"));
  // Specs may keep unknown dims where the kernel sets its outputs itself (a
  // call of a function traced for None dims); Tensor::empty refuses to
  // allocate one that is not fully known.
  const auto specs = ic.outputs();
  std::span<Tensor> outs = make_outputs(specs.size());
  KernelContext kc(op, inputs, attrs, specs, outs);
  detail::ScopedFlushDenormals flush;
  const int64_t t0 = profiler::kernel_begin();  // 0 when the profiler is off
  op.cpu_kernel(kc);
  if (config().check_numerics) check_numerics(op, outs);
  profiler::kernel_end(t0, "eager", op.type_name, {}, outs);
}

template <typename T>
bool all_finite(const Tensor& t) {
  const T* p = t.data<T>();
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

void check_not_symbolic(const OpDef& op, std::span<const Tensor> inputs) {
  for (const Tensor& t : inputs)
    if (t.defined() && t.is_symbolic())
      throw InvalidArgumentError(str_cat(
          op.type_name, ": symbolic tensor ", t.symbol()->tensor_name(t.output_index()), " (",
          t.symbol()->describe(),
          ") was used outside the function being traced; return it from the function instead"));
}

}  // namespace

void check_numerics(const OpDef& op, std::span<const Tensor> outputs, std::string_view node) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    if (!t.defined() || t.is_symbolic()) continue;
    const bool ok = t.dtype() == DType::kFloat32   ? all_finite<float>(t)
                    : t.dtype() == DType::kFloat64 ? all_finite<double>(t)
                                                   : true;
    if (!ok)
      throw InvalidArgumentError(
          str_cat(op.type_name, node.empty() ? "" : str_cat(" (node '", node, "')"), ": output ", i,
                  " contains NaN or Inf (check_numerics is enabled)"));
  }
}

void run_kernel(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                std::vector<Tensor>& outputs) {
  infer_and_run(op, inputs, attrs, [&](size_t n) {
    outputs.clear();
    outputs.resize(n);
    return std::span<Tensor>(outputs);
  });
}

void EagerContext::execute(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                           std::vector<Tensor>& outputs) {
  check_not_symbolic(op, inputs);
  run_kernel(op, inputs, attrs, outputs);
}

Tensor EagerContext::execute1(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs) {
  check_not_symbolic(op, inputs);
  Tensor out;
  infer_and_run(op, inputs, attrs, [&](size_t n) {
    if (n != 1) throw InternalError(str_cat(op.type_name, ": expected one output, got ", n));
    return std::span<Tensor>(&out, 1);
  });
  return out;
}

EagerContext& EagerContext::instance() {
  static EagerContext* ctx = new EagerContext;
  return *ctx;
}

}  // namespace kiln
