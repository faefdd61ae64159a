#include "kiln/context.h"

#include <cmath>

#include "kiln/config.h"

#include "core/tls.h"

namespace kiln {
namespace {
thread_local ExecutionContext* t_current KILN_TLS = nullptr;
thread_local OpObserver* t_observer KILN_TLS = nullptr;

}  // namespace

void check_op_inputs(const OpDef& op, std::span<const Tensor> inputs) {
  if (!op.infer) throw UnimplementedError(str_cat(op.type_name, ": op is not implemented"));
  const size_t declared = op.inputs.size();
  const bool variadic = op.has(kVariadicInput);
  if (variadic ? inputs.size() + 1 < declared : inputs.size() != declared)
    throw InvalidArgumentError(str_cat(op.type_name, ": expected ", variadic ? "at least " : "",
                                       variadic ? declared - 1 : declared, " inputs, got ",
                                       inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined())
      throw InvalidArgumentError(str_cat(op.type_name, ": input ", i, " is an undefined tensor"));
}

Tensor ExecutionContext::execute1(const OpDef& op, std::span<const Tensor> inputs,
                                  const Attrs& attrs) {
  std::vector<Tensor> out;
  execute(op, inputs, attrs, out);
  if (out.size() != 1)
    throw InternalError(str_cat(op.type_name, ": expected one output, got ", out.size()));
  return std::move(out[0]);
}

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
  const auto specs = ic.outputs();
  for (const TensorSpec& s : specs)
    if (!s.shape.is_fully_defined())
      throw InternalError(str_cat(op.type_name, ": inference left shape ", s.shape,
                                  " partially unknown for concrete inputs"));
  std::span<Tensor> outs = make_outputs(specs.size());
  KernelContext kc(op, inputs, attrs, specs, outs);
  op.cpu_kernel(kc);
  if (config().check_numerics) check_numerics(op, outs);
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
      throw InvalidArgumentError(str_cat(
          op.type_name, node.empty() ? "" : str_cat(" (node '", node, "')"), ": output ", i,
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

ExecutionContext& current_context() {
  return t_current ? *t_current : EagerContext::instance();
}

ContextScope::ContextScope(ExecutionContext& ctx) : prev_(t_current) {
  t_current = &ctx;
}
ContextScope::~ContextScope() {
  t_current = prev_;
}

OpObserver* op_observer() {
  return t_observer;
}
void set_op_observer(OpObserver* obs) {
  t_observer = obs;
}

void execute_op(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                std::vector<Tensor>& outputs) {
  current_context().execute(op, inputs, attrs, outputs);
  if (OpObserver* obs = t_observer) [[unlikely]]
    obs->on_op(op, inputs, attrs, outputs);
}

std::vector<Tensor> call_op(OpId id, std::span<const Tensor> inputs, Attrs attrs) {
  const OpDef& op = op_def(id);
  complete_attrs(op, attrs);
  std::vector<Tensor> out;
  execute_op(op, inputs, attrs, out);
  return out;
}

namespace {
Tensor dispatch1(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs) {
  Tensor out = current_context().execute1(op, inputs, attrs);
  if (OpObserver* obs = t_observer) [[unlikely]]
    obs->on_op(op, inputs, attrs, std::span<const Tensor>(&out, 1));
  return out;
}
}  // namespace

Tensor call_op1(OpId id, std::span<const Tensor> inputs, const Attrs& attrs) {
  const OpDef& op = op_def(id);
  if (attrs.size() != op.attrs.size()) {
    Attrs full = attrs;
    complete_attrs(op, full);
    return dispatch1(op, inputs, full);
  }
  return dispatch1(op, inputs, attrs);
}

}  // namespace kiln
