#include "kiln/function.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <iostream>
#include <unordered_map>

#include "compile.h"
#include "core/tls.h"
#include "kiln/config.h"
#include "kiln/ops.h"
#include "kiln/trace.h"
#include "signature.h"
#include "subgraph.h"

namespace kiln {
namespace {

std::mutex g_warn_mu;
WarningHandler& warning_handler() {
  static WarningHandler h = [](const std::string& category, const std::string& msg) {
    std::cerr << "kiln " << category << ": " << msg << std::endl;
  };
  return h;
}
}  // namespace

void detail::warn(const std::string& category, const std::string& msg) {
  WarningHandler h;
  {
    std::lock_guard<std::mutex> lock(g_warn_mu);
    h = warning_handler();
  }
  if (h) h(category, msg);
}

namespace {
using detail::warn;

// (function, trace key) of the traces running on this thread: a function may
// trace itself for other arguments (recursion on Python values that ends),
// never for the same ones (that recursion could not end).
thread_local std::vector<std::pair<const void*, std::vector<int64_t>>> t_active_traces;

// Replaces tensor/spec leaves of `v` by `leaf(i)` in walk order.
template <typename F>
Value map_leaves(const Value& v, size_t& i, F&& leaf) {
  switch (v.kind()) {
    case Value::Kind::kTensor:
    case Value::Kind::kSpec: return leaf(i++, v);
    case Value::Kind::kList:
    case Value::Kind::kTuple:
    case Value::Kind::kDict: {
      std::vector<Value> items;
      for (const Value& x : v.items()) items.push_back(map_leaves(x, i, leaf));
      return v.with_items(std::move(items));
    }
    default: return v;
  }
}

// Output leaves: tensors (and variables, read) become graph outputs.
Value map_outputs(const Value& v, TracingContext& tc) {
  switch (v.kind()) {
    case Value::Kind::kTensor:
    case Value::Kind::kVariable: {
      Tensor t = v.kind() == Value::Kind::kTensor ? v.tensor() : v.variable().read_value();
      Tensor out = call_op1(OpId::Identity, {t});
      tc.graph().outputs().push_back(tc.edge_for(out));
      return Value(out);
    }
    case Value::Kind::kList:
    case Value::Kind::kTuple:
    case Value::Kind::kDict: {
      std::vector<Value> items;
      for (const Value& x : v.items()) items.push_back(map_outputs(x, tc));
      return v.with_items(std::move(items));
    }
    default: return v;
  }
}

std::string describe_spec(const ArgSpec& s) {
  return str_cat(dtype_name(s.dtype), " Tensor, shape=", s.shape.to_string());
}

}  // namespace

void set_warning_handler(WarningHandler handler) {
  std::lock_guard<std::mutex> lock(g_warn_mu);
  warning_handler() = std::move(handler);
}

// ---- ConcreteFunction ----

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

namespace {
std::atomic<void* (*)()> g_block_release{nullptr};
std::atomic<void (*)(void*)> g_block_reacquire{nullptr};

// Runs a plan with the binding's global lock (Python's GIL) released, so
// other threads (tf.data's prefetch and parallel map) run meanwhile. Kernels
// that call back into Python take the lock themselves.
template <typename Runnable>
std::vector<Tensor> run_released(const Runnable& r, std::span<const Tensor> inputs) {
  void* (*release)() = g_block_release.load(std::memory_order_relaxed);
  void* token = release ? release() : nullptr;
  struct Reacquire {
    void* token;
    ~Reacquire() {
      if (token) g_block_reacquire.load(std::memory_order_relaxed)(token);
    }
  } again{token};
  return r.run(inputs);
}
}  // namespace

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

// ---- Function ----

namespace {
std::atomic<uint64_t> g_next_function_id{1};

// Per-thread memo of recent cache hits: (function id, exact key) -> concrete
// function, checked before the shared cache so a steady-state call takes no
// lock and writes no shared memory. Ids are never reused, and a function
// never drops or replaces a cached entry, so a memoized pointer is valid
// whenever its function is the one being called.
struct HitMemo {
  static constexpr size_t kEntries = 8;
  static constexpr size_t kMaxKey = 32;
  uint64_t fn[kEntries] = {};
  uint32_t len[kEntries] = {};
  const ConcreteFunction* cf[kEntries] = {};
  int64_t key[kEntries][kMaxKey];
  uint32_t next = 0;

  const ConcreteFunction* find(uint64_t id, std::span<const int64_t> k) const {
    for (size_t i = 0; i < kEntries; ++i)
      if (fn[i] == id && len[i] == k.size() &&
          std::memcmp(key[i], k.data(), k.size() * sizeof(int64_t)) == 0)
        return cf[i];
    return nullptr;
  }
  void insert(uint64_t id, std::span<const int64_t> k, const ConcreteFunction* c) {
    if (k.size() > kMaxKey) return;
    const size_t i = next++ % kEntries;
    fn[i] = id;
    len[i] = static_cast<uint32_t>(k.size());
    cf[i] = c;
    std::memcpy(key[i], k.data(), k.size() * sizeof(int64_t));
  }
};
struct HitMemoTag {};
using TMemo = detail::ThreadCache<HitMemo, HitMemoTag>;
}  // namespace

struct Function::Impl {
  using Key = std::vector<int64_t>;
  const uint64_t id = g_next_function_id.fetch_add(1, std::memory_order_relaxed);
  mutable std::shared_mutex cache_mu;
  std::unordered_map<Key, std::shared_ptr<const ConcreteFunction>, detail::KeyHash, detail::KeyEq>
      cache;
  // Concrete functions with unknown dims, matched by compatibility.
  std::vector<std::pair<Key, std::shared_ptr<const ConcreteFunction>>> general;
  std::vector<std::vector<detail::Leaf>> traced_leaves;  // per trace, for reasons
  std::recursive_mutex trace_mu;                         // recursive: a trace may trace other keys
  std::vector<std::shared_ptr<const ConcreteFunction>> traced;  // in trace order
  std::atomic<int64_t> tracing_count{0};
  mutable std::mutex reasons_mu;
  std::vector<RetraceReason> reasons;
  std::atomic<uint32_t> history{0};  // bit i: the i-th latest call traced
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> last_warning_call{-100};
  // With input_signature: the one concrete function (fast path).
  std::atomic<const ConcreteFunction*> signature_cf{nullptr};
};

Function::Function(Body body, FunctionOptions options)
    : impl_(std::make_unique<Impl>()), body_(std::move(body)), options_(std::move(options)) {
  if (!body_) throw InvalidArgumentError("Function: the body is empty");
}
Function::~Function() = default;

int64_t Function::tracing_count() const {
  return impl_->tracing_count.load();
}

std::vector<RetraceReason> Function::retrace_reasons() const {
  std::lock_guard<std::mutex> lock(impl_->reasons_mu);
  return impl_->reasons;
}

std::vector<std::shared_ptr<const ConcreteFunction>> Function::concrete_functions() const {
  std::shared_lock<std::shared_mutex> lock(impl_->cache_mu);
  return impl_->traced;
}

std::string Function::pretty_printed_concrete_signatures() const {
  std::shared_lock<std::shared_mutex> lock(impl_->cache_mu);
  // In trace order, without the "ConcreteFunction " prefix (as TensorFlow).
  static const std::string kPrefix = "ConcreteFunction ";
  std::string s;
  for (const auto& cf : impl_->traced) {
    std::string one = cf->pretty_signature();
    if (one.rfind(kPrefix, 0) == 0) one.erase(0, kPrefix.size());
    s += str_cat(s.empty() ? "" : "\n", one);
  }
  return s;
}

namespace {
bool compatible(const detail::Flat& general, const detail::Flat& call) {
  if (general.structure != call.structure || general.specs.size() != call.specs.size())
    return false;
  for (size_t i = 0; i < general.specs.size(); ++i)
    if (!general.specs[i].shape.is_compatible_with(call.specs[i].shape)) return false;
  return true;
}
}  // namespace

void set_blocking_hooks(BlockingHooks hooks) {
  g_block_release.store(hooks.release);
  g_block_reacquire.store(hooks.reacquire);
}

std::shared_ptr<const ConcreteFunction> Function::get_concrete_function(
    const std::vector<Value>& args) {
  const std::vector<Value> call_args = bind_input_signature(args);
  const detail::Flat f = detail::flatten_args(call_args, options_.arg_names);
  if (auto hit = find_cached(f, /*general=*/true)) return hit;
  check_not_recursive(f);
  std::unique_lock<std::recursive_mutex> trace_lock = lock_for_trace();
  if (auto hit = find_cached(f, /*general=*/false)) return hit;  // traced while we waited

  bool generalized = false;
  const std::vector<Shape> shapes = trace_shapes(f, generalized);
  record_retrace_reason(f);
  int traces = 0;
  std::shared_ptr<ConcreteFunction> cf = trace_new(call_args, f, shapes, traces);
  compile(*cf);
  impl_->tracing_count.fetch_add(traces);
  return remember(f, std::move(cf), generalized, traces);
}

std::vector<Value> Function::bind_input_signature(const std::vector<Value>& given) const {
  if (!options_.input_signature) return given;
  const auto& sig = *options_.input_signature;
  const std::vector<Value> args = detail::read_signature_variables(given);
  detail::Flat f = detail::flatten_args(args, options_.arg_names);
  if (f.specs.size() != sig.size() || f.leaves.size() != sig.size())
    throw InvalidArgumentError(str_cat("function '", options_.name, "': expected ", sig.size(),
                                       " tensor arguments matching input_signature, got ",
                                       f.leaves.size(), " arguments"));
  for (size_t i = 0; i < sig.size(); ++i)
    if (f.specs[i].dtype != sig[i].dtype || !sig[i].shape.is_compatible_with(f.specs[i].shape))
      throw InvalidArgumentError(
          str_cat("function '", options_.name, "': argument '", f.leaves[i].path,
                  "' is incompatible with input_signature: expected ", sig[i].to_string(), ", got ",
                  ArgSpec{f.specs[i].dtype, f.specs[i].shape, ""}.to_string()));
  // The specs replace the tensors leaf by leaf, keeping the arguments' structure
  // (a *args parameter is one tuple of several tensors).
  std::vector<Value> out;
  size_t leaf = 0;
  for (const Value& a : args)
    out.push_back(map_leaves(a, leaf, [&](size_t i, const Value&) { return Value(sig[i]); }));
  return out;
}

std::shared_ptr<const ConcreteFunction> Function::find_cached(const detail::Flat& f,
                                                              bool general) const {
  std::shared_lock<std::shared_mutex> lock(impl_->cache_mu);
  auto it = impl_->cache.find(f.key);
  if (it != impl_->cache.end()) return it->second;
  if (general)
    for (const auto& [k, cf] : impl_->general)
      if (compatible(*cf->signature_, f)) return cf;
  return nullptr;
}

void Function::check_not_recursive(const detail::Flat& f) const {
  for (const auto& [p, key] : t_active_traces)
    if (p == this && key == f.key)
      throw FailedPreconditionError(str_cat(
          "function '", options_.name,
          "' called itself while being traced, with arguments that would trace it again: "
          "recursion on tensor values cannot be unrolled into a graph (use a while_loop, or "
          "recurse on Python values that end)"));
}

std::unique_lock<std::recursive_mutex> Function::lock_for_trace() {
  std::unique_lock<std::recursive_mutex> lock(impl_->trace_mu, std::try_to_lock);
  if (!lock.owns_lock()) {
    // Another thread is tracing this function; let it take the binding's
    // global lock (if any) while we wait, or both would wait forever.
    auto* release = g_block_release.load();
    auto* reacquire = g_block_reacquire.load();
    void* token = release ? release() : nullptr;
    lock.lock();
    if (reacquire) reacquire(token);
  }
  return lock;
}

std::vector<Shape> Function::trace_shapes(const detail::Flat& f, bool& generalized) const {
  // reduce_retracing: generalize shapes against a cached signature that
  // differs only in shapes.
  std::vector<Shape> shapes;
  for (const ArgSpec& s : f.specs) shapes.push_back(s.shape);
  if (!options_.reduce_retracing) return shapes;
  std::shared_lock<std::shared_mutex> lock(impl_->cache_mu);
  for (const auto& [k, cf] : impl_->cache) {
    const detail::Flat& old = *cf->signature_;
    if (old.structure != f.structure || old.specs.size() != f.specs.size()) continue;
    for (size_t i = 0; i < shapes.size(); ++i)
      shapes[i] = old.specs[i].shape.most_specific_common(shapes[i]);
    generalized = true;
    break;
  }
  return shapes;
}

void Function::record_retrace_reason(const detail::Flat& f) {
  Impl& im = *impl_;
  if (im.traced_leaves.empty()) return;
  // Against the closest cached signature (ties: the most recent).
  const std::vector<detail::Leaf>* best = nullptr;
  size_t best_diff = SIZE_MAX;
  for (const auto& leaves : im.traced_leaves) {
    size_t diff = leaves.size() == f.leaves.size() ? 0 : 1000;
    for (size_t i = 0; i < std::min(leaves.size(), f.leaves.size()); ++i)
      diff += leaves[i].desc != f.leaves[i].desc || leaves[i].path != f.leaves[i].path;
    if (diff <= best_diff) best_diff = diff, best = &leaves;
  }
  RetraceReason r{"arguments", str_cat(best->size(), " leaves"),
                  str_cat(f.leaves.size(), " leaves")};
  for (size_t i = 0; i < std::min(best->size(), f.leaves.size()); ++i)
    if ((*best)[i].desc != f.leaves[i].desc || (*best)[i].path != f.leaves[i].path) {
      r = {f.leaves[i].path, (*best)[i].desc, f.leaves[i].desc};
      break;
    }
  if (config().log_level >= 1)
    warn("RetraceLog", str_cat("function '", options_.name, "' retraced: ", r.to_string()));
  std::lock_guard<std::mutex> lock(im.reasons_mu);
  im.reasons.push_back(std::move(r));
}

std::shared_ptr<ConcreteFunction> Function::trace_new(const std::vector<Value>& call_args,
                                                      const detail::Flat& f,
                                                      const std::vector<Shape>& shapes,
                                                      int& traces) {
  // Variables may be created on the first trace only (TensorFlow's rule); a
  // first trace that created some is run again with creation disallowed, as
  // tf.function does, so code that would create a variable on every call
  // fails on the first call instead of on a later retrace. Both traces are
  // counted and listed (their signatures are the same), as TensorFlow does.
  const bool first_trace = impl_->tracing_count.load() == 0;
  int created = 0;
  std::shared_ptr<ConcreteFunction> cf = trace_once(call_args, f, shapes, first_trace, created);
  traces = 1;
  if (first_trace && created > 0) {
    cf = trace_once(call_args, f, shapes, /*allow_variables=*/false, created);
    traces = 2;
  }
  cf->signature_ =
      std::make_shared<const detail::Flat>(detail::flatten_args(cf->inputs_, cf->arg_names_));
  return cf;
}

std::shared_ptr<ConcreteFunction> Function::trace_once(const std::vector<Value>& call_args,
                                                       const detail::Flat& f,
                                                       const std::vector<Shape>& shapes,
                                                       bool allow_variables, int& created) {
  const std::vector<std::string>& names = options_.arg_names;
  auto cf = std::shared_ptr<ConcreteFunction>(new ConcreteFunction());
  created = 0;
  cf->name_ = options_.name;
  for (size_t i = 0; i < call_args.size(); ++i)
    cf->arg_names_.push_back(i < names.size() ? names[i] : str_cat("args_", i));
  cf->graph_ = std::make_unique<Graph>(options_.name);
  TracingContext tc(*cf->graph_);
  if (options_.jit_compile) tc.set_jit(true);  // user lines in errors; bodies compile too
  ContextScope scope(tc);
  VariableCreationScope var_rule([&](const std::string& name) {
    if (!allow_variables)
      throw InvalidArgumentError(str_cat(kSingletonVariablesError, " (function '", options_.name,
                                         "' created variable '", name,
                                         "' when traced again: create it once, e.g. only "
                                         "while the attribute that holds it is unset)"));
    ++created;
  });
  t_active_traces.emplace_back(this, f.key);
  struct Pop {
    ~Pop() { t_active_traces.pop_back(); }
  } pop;
  std::vector<std::string> leaf_paths;
  for (const auto& l : f.leaves)
    if (l.is_tensor) leaf_paths.push_back(l.path);
  std::vector<Value> placeholders;
  size_t leaf = 0;
  for (const Value& a : call_args)
    placeholders.push_back(map_leaves(a, leaf, [&](size_t i, const Value&) {
      const ArgSpec& s = f.specs[i];
      const std::string& path = leaf_paths[i];
      std::string pname = !s.name.empty() ? s.name : detail::placeholder_name(path);
      cf->flat_names_.push_back(path);
      // As TensorFlow names them: specs after their path in the argument
      // ("x_0"), placeholders after the argument ("x", "x_1", ...).
      cf->flat_specs_.push_back({s.dtype, shapes[i], pname});
      const std::string node =
          !s.name.empty() ? s.name : detail::placeholder_name(path.substr(0, path.find('[')));
      return Value(tc.add_input(node, s.dtype, shapes[i]));
    }));
  Value result = body_(placeholders);
  cf->outputs_ = map_outputs(result, tc);
  leaf = 0;
  for (const Value& a : call_args)
    cf->inputs_.push_back(
        map_leaves(a, leaf, [&](size_t i, const Value&) { return Value(cf->flat_specs_[i]); }));
  return cf;
}

void ConcreteFunction::compile(const FunctionOptions& options) {
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

void Function::compile(ConcreteFunction& cf) const {
  cf.compile(options_);
  warn_if_all_pruned(cf);
}

void Function::warn_if_all_pruned(const ConcreteFunction& cf) const {
  // A function without results that still has effects (assignments, prints:
  // a train step) is fine; one whose work was all pruned measures nothing.
  bool effects = false;
  for (const auto& n : cf.optimized_->nodes())
    effects |= n->op().has(kStateful) && n->op().id != OpId::ReadVariable;
  if (!cf.optimized_->outputs().empty() || cf.pruned_.empty() || effects) return;
  const size_t n = cf.pruned_.size();
  warn("NoReturnWarning",
       str_cat("function '", options_.name, "' returns no value; ", n,
               n == 1 ? " operation" : " operations", " (e.g. '", cf.pruned_.back().first, "') ",
               n == 1 ? "was" : "were",
               " removed because nothing uses their result. A benchmark of this function "
               "measures nothing: return the result"));
}

std::shared_ptr<const ConcreteFunction> Function::remember(const detail::Flat& f,
                                                           std::shared_ptr<ConcreteFunction> cf,
                                                           bool generalized, int traces) {
  Impl& im = *impl_;
  std::shared_ptr<const ConcreteFunction> result = std::move(cf);
  bool general = generalized;
  for (const ArgSpec& s : result->flat_specs_) general |= !s.shape.is_fully_defined();
  std::unique_lock<std::shared_mutex> lock(im.cache_mu);
  im.cache.emplace(f.key, result);
  if (general) im.general.emplace_back(f.key, result);
  im.traced_leaves.push_back(f.leaves);
  im.traced.insert(im.traced.end(), static_cast<size_t>(traces), result);
  return result;
}

void Function::note_call(bool traced) {
  Impl& im = *impl_;
  uint32_t h = im.history.load(std::memory_order_relaxed), nh;
  // Steady state (no trace in the last 10 calls, at least 10 calls made):
  // nothing would change but the call count, which only spaces warnings
  // apart, and a warning needs 5 traces in the next 10 calls anyway. Skipping
  // the writes keeps concurrent callers off a shared cache line.
  if (!traced && h == 0 && im.calls.load(std::memory_order_relaxed) >= 10) return;
  do {
    nh = ((h << 1) | (traced ? 1u : 0u)) & 0x3ffu;  // the last 10 calls
  } while (!im.history.compare_exchange_weak(h, nh, std::memory_order_relaxed));
  const int64_t call = im.calls.fetch_add(1, std::memory_order_relaxed) + 1;
  const int n = __builtin_popcount(nh);
  if (!traced || n < 5) return;
  int64_t last = im.last_warning_call.load();
  if (call - last < 10 || !im.last_warning_call.compare_exchange_strong(last, call)) return;
  const int window = static_cast<int>(std::min<int64_t>(call, 10));
  std::string warning = str_cat("function '", options_.name, "' was traced ", n,
                                " times in its last ", window, " calls; reasons:");
  {
    std::lock_guard<std::mutex> lock(im.reasons_mu);
    const size_t from = im.reasons.size() > 5 ? im.reasons.size() - 5 : 0;
    for (size_t i = from; i < im.reasons.size(); ++i) warning += "\n  " + im.reasons[i].to_string();
  }
  warning +=
      "\nPass tensors instead of changing Python values, use input_signature with "
      "unknown dims, or reduce_retracing=true.";
  warn("RetracingWarning", warning);
}

Value Function::operator()(const std::vector<Value>& given) {
  if (options_.input_signature && std::any_of(given.begin(), given.end(), detail::has_variable))
    return (*this)(detail::read_signature_variables(given));
  const std::vector<Value>& args = given;
  if (TracingContext::current() || op_observer()) {
    // Called while tracing another function: recorded as one call node
    // (inlined by the optimizer); called eagerly under a gradient tape: one
    // recorded call. Its own cache and signature rules still apply.
    std::vector<Value> spec_args;
    size_t leaf = 0;
    detail::Flat f = detail::flatten_args(args, options_.arg_names);
    for (const Value& a : args)
      spec_args.push_back(map_leaves(a, leaf, [&](size_t i, const Value& v) {
        return v.kind() == Value::Kind::kSpec
                   ? v
                   : Value(ArgSpec{f.specs[i].dtype, f.specs[i].shape, ""});
      }));
    auto cf = get_concrete_function(spec_args);
    std::vector<Tensor> outs = cf->call_flat(f.tensors);
    size_t k = 0;
    return map_leaves(cf->structured_outputs(), k,
                      [&](size_t i, const Value&) { return Value(outs[i]); });
  }
  detail::KeyBuf key;
  detail::LeafTensors tensors;
  detail::flatten_key(args, key, tensors);
  bool flat = true;
  for (const Value& a : args) flat &= a.kind() == Value::Kind::kTensor;
  return call_cached({key.data(), key.size()}, tensors.span(), flat, &args, {});
}

Value Function::call_tensors(std::span<const Tensor> args) {
  for (const Tensor& t : args)
    if (!t.defined()) throw InvalidArgumentError("Function: undefined tensor argument");
  if (TracingContext::current() || op_observer())
    return (*this)(std::vector<Value>(args.begin(), args.end()));
  detail::KeyBuf key;
  detail::flatten_key(args, key);
  // A resource argument gives a key no trace has: the miss reports it.
  return call_cached({key.data(), key.size()}, args, true, nullptr, args);
}

Value Function::call_cached(std::span<const int64_t> k, std::span<const Tensor> ts,
                            bool flat_tensors, const std::vector<Value>* args,
                            std::span<const Tensor> tensor_args) {
  Impl& im = *impl_;
  const ConcreteFunction* cf = nullptr;
  if (options_.input_signature) {
    // One concrete function: arguments that are its tensors, matching its
    // specs, need no key lookup.
    const ConcreteFunction* sig = im.signature_cf.load(std::memory_order_acquire);
    if (sig && flat_tensors && ts.size() == sig->flat_specs_.size()) {
      bool ok = true;
      for (size_t i = 0; i < ts.size() && ok; ++i)
        ok = ts[i].dtype() == sig->flat_specs_[i].dtype &&
             sig->flat_specs_[i].shape.is_compatible_with(ts[i].shape());
      if (ok) cf = sig;
    }
  } else {
    HitMemo* memo = TMemo::get();
    if (memo) cf = memo->find(im.id, k);
    if (!cf) {
      std::shared_lock<std::shared_mutex> lock(im.cache_mu);
      auto it = im.cache.find(k);
      if (it != im.cache.end()) cf = it->second.get();
      if (cf && memo) memo->insert(im.id, k, cf);
    }
  }
  // A hit matched every tensor leaf (exact key, or the signature's specs);
  // otherwise call_flat checks them and names a mismatching argument.
  const bool hit = cf != nullptr;
  if (hit) {
    note_call(false);
  } else {
    const int64_t before = tracing_count();
    std::shared_ptr<const ConcreteFunction> found = get_concrete_function(
        args ? *args : std::vector<Value>(tensor_args.begin(), tensor_args.end()));
    cf = found.get();
    if (options_.input_signature) {
      im.signature_cf.store(cf, std::memory_order_release);
    } else {
      // Alias this exact key to a generalized concrete function; the memo
      // mirrors what the cache holds for the key.
      std::unique_lock<std::shared_mutex> lock(im.cache_mu);
      cf = im.cache.emplace(std::vector<int64_t>(k.begin(), k.end()), std::move(found))
               .first->second.get();
      if (HitMemo* memo = TMemo::get()) memo->insert(im.id, k, cf);
    }
    note_call(tracing_count() != before);
  }
  std::vector<Tensor> out = hit ? run_released(*cf->plan_, ts) : cf->call_flat(ts);
  const Value& outs = cf->structured_outputs();
  if (outs.kind() == Value::Kind::kTensor) return Value(std::move(out[0]));
  size_t i = 0;
  return map_leaves(outs, i, [&](size_t j, const Value&) { return Value(std::move(out[j])); });
}

}  // namespace kiln
