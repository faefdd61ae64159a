// Dispatch: every op call goes through here to the current thread's
// ExecutionContext (eager by default, src/runtime/; a trace records instead,
// src/function/), then to the thread's OpObserver (gradient tapes).
#include "core/tls.h"
#include "kiln/context.h"

namespace kiln {
namespace {
thread_local ExecutionContext* t_current KILN_TLS = nullptr;
thread_local OpObserver* t_observer KILN_TLS = nullptr;

// The float16/bfloat16 dtype among the inputs of a kHalfInFloat row, or
// kInvalid; mixing it with another float dtype is a dtype mismatch.
DType half_input(const OpDef& op, std::span<const Tensor> inputs) {
  DType half = DType::kInvalid;
  bool other_float = false;
  for (const Tensor& t : inputs) {
    if (!t.defined()) continue;
    const DType d = t.dtype();
    if (is_half(d)) {
      if (half != DType::kInvalid && half != d)
        throw InvalidArgumentError(
            str_cat(op.type_name, ": dtype mismatch: ", dtype_name(half), " and ", dtype_name(d)));
      half = d;
    } else {
      other_float |= is_floating(d);
    }
  }
  if (half != DType::kInvalid && other_float)
    throw InvalidArgumentError(str_cat(op.type_name, ": dtype mismatch: ", dtype_name(half),
                                       " mixed with another float dtype (kiln does not promote "
                                       "dtypes implicitly; use cast)"));
  return half;
}

// A half dtype the op's own kernel computes (kNativeBFloat16).
bool native_half(const OpDef& op, DType half) {
  return half == DType::kBFloat16 && op.has(kNativeBFloat16);
}

// Runs a kHalfInFloat row on float32 copies of its half inputs and rounds its
// float32 outputs back to `half`: eagerly or traced (the casts are recorded).
void execute_in_float(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                      DType half, std::vector<Tensor>& outputs) {
  std::vector<Tensor> up(inputs.begin(), inputs.end());
  for (Tensor& t : up)
    if (t.defined() && t.dtype() == half) t = call_op1(OpId::Cast, {t}, {DType::kFloat32});
  execute_op(op, up, attrs, outputs);
  for (Tensor& t : outputs)
    if (t.defined() && t.dtype() == DType::kFloat32) t = call_op1(OpId::Cast, {t}, {half});
}

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
  if (op.has(kHalfInFloat)) [[unlikely]]
    if (DType half = half_input(op, inputs); half != DType::kInvalid && !native_half(op, half))
      return execute_in_float(op, inputs, attrs, half, outputs);
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
  if (op.has(kHalfInFloat)) [[unlikely]]
    if (DType half = half_input(op, inputs); half != DType::kInvalid && !native_half(op, half)) {
      std::vector<Tensor> out;
      execute_op(op, inputs, attrs, out);
      return std::move(out.at(0));
    }
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
