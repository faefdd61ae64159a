#include "kiln/function.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <iostream>
#include <unordered_map>

#include "compile.h"
#include "core/tls.h"
#include "function_util.h"
#include "kiln/config.h"
#include "kiln/ops.h"
#include "kiln/profiler.h"
#include "kiln/trace.h"
#include "signature.h"
#include "subgraph.h"

namespace kiln {
namespace detail {
std::atomic<void* (*)()> g_block_release{nullptr};
std::atomic<void (*)(void*)> g_block_reacquire{nullptr};
std::atomic<CallObserver> g_call_observer{nullptr};
}  // namespace detail
using detail::map_leaves;

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

}  // namespace

void set_warning_handler(WarningHandler handler) {
  std::lock_guard<std::mutex> lock(g_warn_mu);
  warning_handler() = std::move(handler);
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

void set_call_observer(CallObserver observer) {
  detail::g_call_observer.store(observer);
}

void set_blocking_hooks(BlockingHooks hooks) {
  detail::g_block_release.store(hooks.release);
  detail::g_block_reacquire.store(hooks.reacquire);
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
    detail::BindingLockReleased unlocked;
    lock.lock();
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
  profiler::ScopedTrace trace([&] { return str_cat("trace ", options_.name); }, "tracing", 2);
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
  detail::observe_call(*cf);
  std::vector<Tensor> out = hit ? detail::run_released(*cf->plan_, ts) : cf->call_flat(ts);
  const Value& outs = cf->structured_outputs();
  if (outs.kind() == Value::Kind::kTensor) return Value(std::move(out[0]));
  size_t i = 0;
  return map_leaves(outs, i, [&](size_t j, const Value&) { return Value(std::move(out[j])); });
}

}  // namespace kiln
