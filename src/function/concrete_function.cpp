// ConcreteFunction: one traced graph, optimized and compiled to a plan; called
// directly, or recorded as one call node while another function traces.
#include <algorithm>

#include "compile.h"
#include "function_util.h"
#include "kiln/config.h"
#include "kiln/function.h"
#include "kiln/ops.h"
#include "kiln/profiler.h"
#include "kiln/trace.h"
#include "signature.h"
#include "subgraph.h"

namespace kiln {
using detail::describe_spec;
using detail::map_leaves;
using detail::run_released;
using detail::warn;

std::string detail::describe_spec(const ArgSpec& s) {
  return str_cat(dtype_name(s.dtype), " Tensor, shape=", s.shape.to_string());
}

ConcreteFunction::ConcreteFunction() = default;
ConcreteFunction::~ConcreteFunction() = default;

namespace {
// Calls f(body) for each jit-compiled control-flow body of `g`, nested ones
// included, in graph order.
template <typename F>
void for_each_jit_body(const Graph& g, F&& f) {
  for (const auto& node : g.nodes())
    for (const AttrValue& a : node->attrs())
      if (const auto* r = std::get_if<Ref<Subgraph>>(&a))
        if (const auto* body = dynamic_cast<const detail::GraphSubgraph*>(r->get())) {
          if (body->jit()) f(*body);
          for_each_jit_body(body->graph(), f);
        }
}
}  // namespace

std::string ConcreteFunction::compiler_ir(std::string_view stage) const {
  if (!jit_)
    throw InvalidArgumentError(str_cat("experimental_get_compiler_ir: function '", name_,
                                       "' was not traced with jit_compile=True"));
  std::string jit::JitResult::*part = nullptr;
  if (stage == "hlo") part = &jit::JitResult::hlo;
  if (stage == "optimized_hlo") part = &jit::JitResult::optimized_hlo;
  if (stage == "source") part = &jit::JitResult::source;
  if (!part)
    throw InvalidArgumentError(str_cat("experimental_get_compiler_ir: unknown stage '", stage,
                                       "'; valid stages are 'hlo', 'optimized_hlo', 'source'"));
  // The function's own module, then each cond/while body's (a module each).
  std::string s = (*jit_).*part;
  for_each_jit_body(*optimized_, [&](const detail::GraphSubgraph& body) {
    if (!(body.jit()->*part).empty())
      s += str_cat("\n// ---- body '", body.name(), "' ----\n", body.jit()->*part);
  });
  return s;
}

size_t ConcreteFunction::jit_kernels() const {
  if (!jit_) return 0;
  size_t n = jit_->kernels;
  for_each_jit_body(*optimized_,
                    [&](const detail::GraphSubgraph& body) { n += body.jit_kernels(); });
  return n;
}

void ConcreteFunction::check_flat(std::span<const Tensor> inputs) const {
  if (inputs.size() != flat_specs_.size())
    throw InvalidArgumentError(str_cat("ConcreteFunction ", name_, " expects ", flat_specs_.size(),
                                       " tensor inputs, got ", inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ArgSpec& s = flat_specs_[i];
    const Tensor& t = inputs[i];
    if (!t.defined() || t.dtype() != s.dtype || !s.shape.is_compatible_with(t.shape()))
      throw InvalidArgumentError(str_cat(
          "ConcreteFunction ", name_, ": argument '", flat_names_[i], "' expects a ",
          describe_spec(s), ", got ",
          t.defined() ? describe_spec({t.dtype(), t.shape(), ""}) : std::string("nothing")));
  }
}

std::vector<Tensor> ConcreteFunction::call_flat(std::span<const Tensor> inputs) const {
  check_flat(inputs);
  if (!TracingContext::current() && !op_observer()) return run_released(*plan_, inputs);
  // Inside a trace: one call node. Eagerly under a tape: one recorded call.
  std::vector<Tensor> args(inputs.begin(), inputs.end());
  args.insert(args.end(), call_->hoisted_values.begin(), call_->hoisted_values.end());
  auto fs = Ref<detail::FunctionSubgraph>::adopt(new detail::FunctionSubgraph(shared_from_this()));
  // Always StatefulPartitionedCall, as the seed's release records a call
  // (TensorFlow 2.21 records a PartitionedCall for a function without stateful ops).
  const OpDef& call = op_def(OpId::StatefulPartitionedCall);
  if (auto* taped = detail::autodiff_hooks().would_record; taped && taped(args)) {
    // Under a tape: call the forward that also returns what the backward
    // reads, and keep those values in the tape entry (as extra attrs after
    // `f`; call_grad uses them). While tracing, the call node is that
    // forward's, with the extra outputs; the tape entry names the function.
    if (const detail::Residuals* r = fs->residuals()) {
      std::vector<Tensor> all;
      if (TracingContext::current()) {
        OpObserver* obs = op_observer();
        set_op_observer(nullptr);
        try {
          execute_op(call, inputs, Attrs{Ref<Subgraph>(r->forward)}, all);
        } catch (...) {
          set_op_observer(obs);
          throw;
        }
        set_op_observer(obs);
      } else {
        all = run_released(*r->forward, inputs);
      }
      Attrs attrs{Ref<Subgraph>(fs)};
      for (size_t k = r->num_outputs; k < all.size(); ++k) attrs.emplace_back(std::move(all[k]));
      all.resize(r->num_outputs);
      if (OpObserver* obs = op_observer()) obs->on_op(call, args, attrs, all);
      return all;
    }
  }
  std::vector<Tensor> out;
  execute_op(call, args, Attrs{Ref<Subgraph>(fs)}, out);
  return out;
}

void ConcreteFunction::prepare_calls() {
  call_ = std::make_unique<detail::CallInfo>();
  detail::CallInfo& c = *call_;
  for (const ArgSpec& s : flat_specs_) c.inputs.push_back({s.dtype, s.shape});
  for (const auto& ref : graph_->nodes()) {
    Node* n = ref.get();
    c.stateful |= n->op().has(kStateful);
    if (n->op().id != OpId::Const || n->outputs()[0].dtype != DType::kResource) continue;
    c.hoisted.push_back(n);
    c.hoisted_values.push_back(std::get<Tensor>(n->attr("value")));
    c.inputs.push_back(n->outputs()[0]);
  }
  for (const Edge& e : graph_->outputs())
    c.outputs.push_back(e.node->outputs()[static_cast<size_t>(e.index)]);
}

Value ConcreteFunction::operator()(const std::vector<Value>& args) const {
  detail::Flat f = detail::flatten_args(args, arg_names_);
  const detail::Flat& traced = *signature_;
  // Bound (non-tensor) values and the structure must match; tensor dtypes and
  // shapes are checked by call_flat with the argument's name.
  const size_t n = std::min(f.leaves.size(), traced.leaves.size());
  for (size_t i = 0; i < n; ++i) {
    const auto &a = traced.leaves[i], &b = f.leaves[i];
    if (a.path != b.path) break;
    if (a.is_tensor != b.is_tensor || (!a.is_tensor && a.desc != b.desc))
      throw InvalidArgumentError(str_cat("ConcreteFunction ", name_, "(", join_names(), ")",
                                         " was constructed with ", a.kind, " value ", a.desc,
                                         " in ", a.path, ", but was called with ", b.kind,
                                         " value ", b.desc, "."));
  }
  if (f.leaves.size() != traced.leaves.size() || f.specs.size() != traced.specs.size())
    throw InvalidArgumentError(str_cat("ConcreteFunction ", name_, "(", join_names(), ")",
                                       ": the arguments' structure differs from the traced one"));
  detail::observe_call(*this);
  std::vector<Tensor> out = call_flat(f.tensors);
  size_t i = 0;
  return map_leaves(outputs_, i, [&](size_t k, const Value&) { return Value(out[k]); });
}

std::string ConcreteFunction::join_names() const {
  std::string s;
  for (size_t i = 0; i < arg_names_.size(); ++i) s += str_cat(i ? ", " : "", arg_names_[i]);
  return s;
}

std::string ConcreteFunction::pretty_signature() const {
  // Header: name(a, b=2) -- bound (non-tensor) top-level args show their value.
  std::string head = str_cat("ConcreteFunction ", name_, "(");
  std::string args_block;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const std::string& n = arg_names_[i];
    const Value& v = inputs_[i];
    head += i ? ", " : "";
    if (v.kind() == Value::Kind::kSpec) {
      head += n;
      args_block += str_cat("    ", n, ": ", describe_spec(v.spec()), "\n");
    } else if (v.kind() == Value::Kind::kList || v.kind() == Value::Kind::kTuple ||
               v.kind() == Value::Kind::kDict) {
      head += n;
      args_block += str_cat("    ", n, ": ", v.repr(), "\n");
    } else {
      head += str_cat(n, "=", v.repr());
    }
  }
  head += ")\n";
  std::string s = head + "  Args:\n" + args_block + "  Returns:\n";
  std::vector<std::string> outs;
  size_t i = 0;
  map_leaves(outputs_, i, [&](size_t, const Value& v) {
    outs.push_back(describe_spec({v.tensor().dtype(), v.tensor().shape(), ""}));
    return v;
  });
  if (outputs_.kind() == Value::Kind::kTensor) {
    s += "    " + outs[0] + "\n";
  } else if (outputs_.is_none()) {
    s += "    NoneTensorSpec()\n";  // as TensorFlow prints a function returning nothing
  } else {
    s += "    " + outputs_.repr() + "\n";
  }
  return s;
}

void ConcreteFunction::compile(const FunctionOptions& options) {
  profiler::ScopedTrace trace([&] { return str_cat("compile ", name_); }, "compile", 2);
  detail::CompileOptions co;
  co.optimize = options.optimize;
  co.disabled_passes = options.disabled_passes;
  co.jit = options.jit_compile;
  detail::CompiledGraph compiled = detail::compile_graph(graph_->clone(), co);
  if (!compiled.jit.warning.empty()) warn("JitWarning", compiled.jit.warning);
  if (co.jit) jit_ = std::make_shared<const jit::JitResult>(std::move(compiled.jit));
  optimized_ = std::move(compiled.graph);
  plan_ = std::move(compiled.plan);
  report_ = std::move(compiled.report);
  if (options.optimize) {
    pruned_ = report_.unused_ops();
    if (config().log_level >= 2) warn("OptimizeLog", report_.to_string());
  }
  prepare_calls();
}

std::shared_ptr<const ConcreteFunction> ConcreteFunction::from_graph(
    std::unique_ptr<Graph> graph, std::vector<Value> inputs, std::vector<std::string> arg_names,
    Value outputs, const FunctionOptions& options) {
  auto cf = std::shared_ptr<ConcreteFunction>(new ConcreteFunction());
  cf->name_ = options.name;
  if (arg_names.size() != inputs.size())
    throw InvalidArgumentError(str_cat("function '", cf->name_, "': ", arg_names.size(),
                                       " argument names for ", inputs.size(), " arguments"));
  cf->arg_names_ = std::move(arg_names);
  cf->inputs_ = std::move(inputs);
  detail::Flat flat = detail::flatten_args(cf->inputs_, cf->arg_names_);
  const std::vector<Node*>& ph = graph->inputs();
  if (flat.specs.size() != ph.size())
    throw InvalidArgumentError(str_cat("function '", cf->name_, "': its signature has ",
                                       flat.specs.size(), " tensors, its graph ", ph.size(),
                                       " inputs"));
  size_t k = 0;
  for (const auto& leaf : flat.leaves) {
    if (!leaf.is_tensor) continue;
    const TensorSpec& got = ph[k]->outputs()[0];
    const ArgSpec& want = flat.specs[k];
    if (got.dtype != want.dtype || got.shape != want.shape)
      throw InvalidArgumentError(str_cat("function '", cf->name_, "': argument ", leaf.path, " is ",
                                         want.to_string(), " but its graph input is ",
                                         dtype_name(got.dtype), got.shape.to_string()));
    cf->flat_names_.push_back(leaf.path);
    cf->flat_specs_.push_back({want.dtype, want.shape, ph[k]->name()});
    ++k;
  }
  size_t i = 0;
  const auto& outs = graph->outputs();
  bool bad = false;
  cf->outputs_ = map_leaves(outputs, i, [&](size_t j, const Value&) {
    if (j >= outs.size()) {
      bad = true;
      return Value();
    }
    return Value(outs[j].node->output(outs[j].index));
  });
  if (bad || i != outs.size())
    throw InvalidArgumentError(str_cat("function '", cf->name_, "': its result structure has ", i,
                                       " tensors, its graph ", outs.size(), " outputs"));
  cf->graph_ = std::move(graph);
  cf->compile(options);
  cf->signature_ =
      std::make_shared<const detail::Flat>(detail::flatten_args(cf->inputs_, cf->arg_names_));
  return cf;
}

}  // namespace kiln
