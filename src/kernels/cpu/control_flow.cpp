// CPU kernels of the control-flow ops: they run their subgraph bodies.
#include <algorithm>

#include "bind.h"

namespace kiln::cpu {
namespace {

// `what` (the op's predicate, or `g`'s result) must be a bool scalar.
bool truth(const KernelContext& c, const Tensor& t, const char* what, const Subgraph* g) {
  if (!t.defined() || t.dtype() != DType::kBool || t.rank() != 0)
    c.fail(what, g ? str_cat(" of '", g->name(), "'") : std::string(),
           " must be a bool scalar, got ",
           t.defined() ? str_cat(dtype_name(t.dtype()), " ", t.shape()) : std::string("nothing"));
  return t.item<bool>();
}

void set_outputs(KernelContext& c, std::vector<Tensor>& values) {
  if (values.size() != c.num_outputs())
    throw InternalError(str_cat(c.op().type_name, ": body returned ", values.size(), " values for ",
                                c.num_outputs(), " outputs"));
  for (size_t i = 0; i < values.size(); ++i) c.set_output(i, std::move(values[i]));
}

void if_kernel(KernelContext& c) {
  const bool p = truth(c, c.input(0), "cond", nullptr);
  const Subgraph& g = c.attr_subgraph(p ? "then_branch" : "else_branch");
  std::vector<Tensor> out = g.run(std::span<const Tensor>(&c.input(0) + 1, c.num_inputs() - 1));
  set_outputs(c, out);
}

void while_kernel(KernelContext& c) {
  const Subgraph& cg = c.attr_subgraph("cond");
  const Subgraph& bg = c.attr_subgraph("body");
  const int64_t max_iter = c.attr_int("maximum_iterations");
  const size_t n_vars = c.num_outputs();
  std::vector<Tensor> state(&c.input(0), &c.input(0) + c.num_inputs());
  // Each body owns its inputs: the body its loop variables (x = tanh(x)
  // writes in place), copies of the captured values after them; the cond
  // copies. The vectors are reused across iterations.
  std::vector<Tensor> cond_in(state.size()), body_in(state.size()), p, next;
  const auto invariants = bg.input_specs();
  for (int64_t it = 0; max_iter < 0 || it < max_iter; ++it) {
    std::copy(state.begin(), state.end(), cond_in.begin());
    cg.run_owned(cond_in, p);
    std::fill(cond_in.begin(), cond_in.end(), Tensor());  // what the cond left unread
    if (!truth(c, p.at(0), "the result of cond", &cg)) break;
    for (size_t i = 0; i < state.size(); ++i)
      body_in[i] = i < n_vars ? std::move(state[i]) : state[i];
    bg.run_owned(body_in, next);
    if (next.size() < n_vars)
      throw InternalError(
          str_cat("While: body returned ", next.size(), " values for ", n_vars, " loop variables"));
    for (size_t i = 0; i < n_vars; ++i) {
      // Inference checked the body's specs; a shape can still only be
      // known per call when the invariant has unknown dims.
      if (next[i].dtype() != invariants[i].dtype ||
          !invariants[i].shape.is_compatible_with(next[i].shape()))
        c.fail("body '", bg.name(), "' returned ", dtype_name(next[i].dtype()), " ",
               next[i].shape(), " for loop variable ", i, ", whose invariant is ",
               dtype_name(invariants[i].dtype), " ", invariants[i].shape);
      state[i] = std::move(next[i]);
    }
  }
  state.resize(n_vars);
  set_outputs(c, state);
}

// Runs the host callback and checks its results against the declared specs.
void py_function_kernel(KernelContext& c) {
  const Subgraph& g = c.attr_subgraph("func");
  std::vector<Tensor> out = g.run(std::span<const Tensor>(&c.input(0), c.num_inputs()));
  const auto specs = g.output_specs();
  if (out.size() != specs.size())
    c.fail("'", g.name(), "' returned ", out.size(), " values, expected ", specs.size());
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i].defined() || out[i].dtype() != specs[i].dtype ||
        !specs[i].shape.is_compatible_with(out[i].shape()))
      c.fail("'", g.name(), "' result ", i, " is ",
             out[i].defined() ? str_cat(dtype_name(out[i].dtype()), " ", out[i].shape())
                              : std::string("nothing"),
             ", expected ", dtype_name(specs[i].dtype), " ", specs[i].shape);
  set_outputs(c, out);
}

// A function call not inlined (the inline pass disabled, or eagerly).
void call_kernel(KernelContext& c) {
  const size_t n = c.num_inputs();
  std::vector<Tensor> out = c.attr_subgraph("f").run(n ? std::span<const Tensor>(&c.input(0), n)
                                                       : std::span<const Tensor>());
  set_outputs(c, out);
}

// The values pass through as views: new tensors sharing the buffers, so a
// tape tells the outputs (whose gradient is grad_fn's) from the inputs.
void custom_gradient_kernel(KernelContext& c) {
  const size_t n = static_cast<size_t>(c.attr_int("num_args"));
  for (size_t i = n; i < c.num_inputs(); ++i)
    c.set_output(i - n, c.input(i).view(c.input(i).shape()));
}

}  // namespace

void bind_tensor_array_kernels(OpTableBuilder& t);  // tensor_array.cpp

void bind_control_flow_kernels(OpTableBuilder& t) {
  bind_tensor_array_kernels(t);
  t.kernel(OpId::If, if_kernel);
  t.kernel(OpId::StatelessIf, if_kernel);
  t.kernel(OpId::While, while_kernel);
  t.kernel(OpId::PyFunction, py_function_kernel);
  t.kernel(OpId::CustomGradient, custom_gradient_kernel);
  t.kernel(OpId::PartitionedCall, call_kernel);
  t.kernel(OpId::StatefulPartitionedCall, call_kernel);
}

}  // namespace kiln::cpu
