// Functions: a callable traced once per input signature into a graph,
// optimized, compiled to a plan, and cached (TensorFlow's tf.function).
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "kiln/executor.h"
#include "kiln/graph.h"
#include "kiln/passes.h"
#include "kiln/variable.h"

namespace kiln {
namespace jit {
struct JitResult;
}
namespace detail {
struct Flat;
struct CallInfo;
class FunctionSubgraph;
}  // namespace detail

/// A named spec for a function argument (TensorFlow's tf.TensorSpec).
struct ArgSpec {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::string name;
  /// "TensorSpec(shape=(None,), dtype=tf.int32, name=None)"
  std::string to_string() const;
};

/// A structured argument or result: tensors, variables, Python-like scalars
/// and strings (bound at trace time), nested lists/tuples/dicts, tensor specs
/// (for get_concrete_function) and opaque objects keyed by a stable identity.
class Value {
 public:
  enum class Kind {
    kNone,
    kTensor,
    kSpec,
    kVariable,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kTuple,
    kDict,
    kOpaque
  };

  Value() = default;
  Value(Tensor t);                                  // NOLINT: implicit by design
  Value(ArgSpec s);                                 // NOLINT
  Value(Variable v);                                // NOLINT
  Value(bool b);                                    // NOLINT
  Value(int v) : Value(static_cast<int64_t>(v)) {}  // NOLINT
  Value(int64_t v);                                 // NOLINT
  Value(double v);                                  // NOLINT
  Value(std::string s);                             // NOLINT
  Value(const char* s) : Value(std::string(s)) {}   // NOLINT
  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  static Value dict(std::vector<std::pair<std::string, Value>> items);
  /// An object identified by `id` (never reused while the object lives).
  static Value opaque(uint64_t id, std::string repr);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  const Tensor& tensor() const;
  const ArgSpec& spec() const;
  const Variable& variable() const;
  bool as_bool() const;
  int64_t as_int() const;
  double as_float() const;
  const std::string& as_string() const;
  const std::vector<Value>& items() const;       ///< list / tuple / dict values
  const std::vector<std::string>& keys() const;  ///< dict keys (sorted)
  /// Dict item indices (into items()) in the order the dict was given.
  std::vector<size_t> insertion_order() const;
  /// The same list, tuple or dict (keys and their given order kept) holding
  /// `items` instead, in items() order.
  Value with_items(std::vector<Value> items) const;
  uint64_t opaque_id() const { return i_; }
  /// Python-like repr: 1, 2.5, 'aa', [1, 2], (t,), {'a': 1}.
  std::string repr() const;

 private:
  Kind kind_ = Kind::kNone;
  Tensor tensor_;
  std::shared_ptr<ArgSpec> spec_;
  Variable variable_;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<std::vector<Value>> items_;
  std::shared_ptr<std::vector<std::string>> keys_;
  std::shared_ptr<std::vector<size_t>> order_;  // dict: given order; null when sorted
};

/// Why a call traced again: the argument that differed from the closest
/// cached signature, and how ("x: float32[1] -> float32[2]").
struct RetraceReason {
  std::string argument;
  std::string before;
  std::string after;
  std::string to_string() const;
};

/// Start of the error a Function raises when a trace after the first creates
/// a Variable (TensorFlow's wording); bindings match it to add context.
inline constexpr const char* kSingletonVariablesError =
    "kiln.function only supports singleton kiln.Variables created on the first call. Make sure "
    "the kiln.Variable is only created once or created outside kiln.function.";

/// Called around a blocking wait for another thread's trace of the same
/// function, and around running a traced plan. A binding whose callables need
/// a global lock (Python's GIL) sets these so other threads can take that
/// lock meanwhile (the tracing thread; tf.data's prefetch and parallel map):
/// `release` returns a token passed to `reacquire` afterwards.
struct BlockingHooks {
  void* (*release)() = nullptr;
  void (*reacquire)(void*) = nullptr;
};
/// Installs the hooks (process-wide; set once at start-up).
void set_blocking_hooks(BlockingHooks hooks);

class ConcreteFunction;
/// Sees the concrete function of every Function call and direct
/// ConcreteFunction call made while it is set (tf.summary.trace_on records
/// the graphs that ran this way). Process-wide; nullptr stops it. Costs one
/// relaxed atomic load per call when unset.
using CallObserver = void (*)(const ConcreteFunction& cf);
void set_call_observer(CallObserver observer);

struct FunctionOptions {
  std::string name = "function";
  /// Names of the positional arguments (placeholders are named after them);
  /// missing names default to "args_0", "args_1", ...
  std::vector<std::string> arg_names;
  /// When set, calls must match these specs (unknown dims allowed) and only
  /// one trace is ever made.
  std::optional<std::vector<ArgSpec>> input_signature;
  /// After a miss that differs only in shapes, trace once for the most
  /// specific common shape and reuse it.
  bool reduce_retracing = false;
  /// Reserved for the JIT.
  bool jit_compile = false;
  /// Run the optimization passes (prune, fold, CSE, simplify).
  bool optimize = true;
  /// Passes to skip by name (see kiln/passes.h pass_names()).
  std::set<std::string> disabled_passes;
};

/// A traced function: its graphs, plan and signature. Immutable and
/// thread-safe to call. Called while another function is traced, it is
/// recorded as one StatefulPartitionedCall node (inlined by the optimizer);
/// called eagerly under a GradientTape, as one call the tape differentiates
/// with a backward function built once per ConcreteFunction.
class ConcreteFunction : public std::enable_shared_from_this<ConcreteFunction> {
 public:
  ~ConcreteFunction();
  /// Calls with a structure matching the traced one. Tensor leaves must
  /// match dtype and shape; values bound at trace time must be equal.
  Value operator()(const std::vector<Value>& args) const;
  /// Calls with the flat tensor inputs in placeholder order.
  std::vector<Tensor> call_flat(std::span<const Tensor> inputs) const;

  const std::string& name() const { return name_; }
  const Graph& graph() const { return *graph_; }
  const Graph& optimized_graph() const { return *optimized_; }
  const Plan& plan() const { return *plan_; }
  /// The arguments as traced: tensor leaves are ArgSpecs.
  const std::vector<Value>& structured_input_signature() const { return inputs_; }
  /// The result structure: tensor leaves are symbolic tensors of the graph.
  const Value& structured_outputs() const { return outputs_; }
  /// "ConcreteFunction double(a)\n  Args:\n    a: string Tensor, shape=()\n ..."
  std::string pretty_signature() const;
  /// Ops the optimizer pruned because nothing used them: (name, type).
  const std::vector<std::pair<std::string, std::string>>& pruned_ops() const { return pruned_; }
  /// What each optimization pass changed (a debug dump via to_string()).
  const OptimizeReport& optimize_report() const { return report_; }
  /// TensorFlow's experimental_get_compiler_ir for jit_compile=True functions:
  /// stage "hlo" is the fused kernels' IR as lowered, "optimized_hlo" after
  /// the kernel passes, "source" the generated C++ (the function's module,
  /// then each cond/while body's). InvalidArgumentError for
  /// another stage, or for a function traced without jit_compile.
  std::string compiler_ir(std::string_view stage) const;
  /// Compiled kernels running in the optimized graph and its cond/while
  /// bodies (0 without jit_compile, or when no compiler was found).
  size_t jit_kernels() const;
  /// Whether it was traced with jit_compile.
  bool jit_compile() const { return jit_ != nullptr; }
  /// Names of the structured arguments (one per structured_input_signature entry).
  const std::vector<std::string>& arg_names() const { return arg_names_; }

  /// A concrete function from a graph built outside tracing (the saved-model
  /// loader). `graph`'s inputs are its placeholders in flat order and its
  /// outputs are set; `inputs` are the structured arguments (ArgSpec leaves
  /// in placeholder order, named by `arg_names`), `outputs` the result
  /// structure whose tensor leaves are the graph's outputs in order.
  /// Optimized and compiled as a traced one (InvalidArgumentError when the
  /// structures do not match the graph).
  static std::shared_ptr<const ConcreteFunction> from_graph(std::unique_ptr<Graph> graph,
                                                            std::vector<Value> inputs,
                                                            std::vector<std::string> arg_names,
                                                            Value outputs,
                                                            const FunctionOptions& options);

 private:
  friend class Function;
  friend class detail::FunctionSubgraph;
  ConcreteFunction();
  std::string join_names() const;
  /// Checks count, dtypes and shapes of flat inputs (InvalidArgumentError).
  void check_flat(std::span<const Tensor> inputs) const;
  /// Fills call_: the call op's input/output specs and variable handles.
  void prepare_calls();
  /// Optimizes graph_ into optimized_ and plan_ per `options`, then prepare_calls().
  void compile(const FunctionOptions& options);
  std::string name_;
  std::vector<std::string> arg_names_;
  std::unique_ptr<Graph> graph_, optimized_;
  std::unique_ptr<Plan> plan_;
  std::vector<Value> inputs_;
  Value outputs_;
  std::vector<ArgSpec> flat_specs_;  // placeholder order
  std::vector<std::string> flat_names_;
  std::vector<std::pair<std::string, std::string>> pruned_;
  OptimizeReport report_;
  std::shared_ptr<const jit::JitResult> jit_;      // null without jit_compile
  std::shared_ptr<const detail::Flat> signature_;  // inputs_ flattened once
  std::unique_ptr<detail::CallInfo> call_;         // how calls record it
};

/// Receives warnings (retracing, pruned no-return functions). Default: stderr.
using WarningHandler = std::function<void(const std::string& category, const std::string& msg)>;
void set_warning_handler(WarningHandler handler);

class Function {
 public:
  using Body = std::function<Value(const std::vector<Value>& args)>;
  explicit Function(Body body, FunctionOptions options = {});
  ~Function();
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;

  /// Traces on a cache miss, then runs the concrete function.
  Value operator()(const std::vector<Value>& args);
  /// The same call when every argument is a tensor, without building Values
  /// (the fast path for bindings): equal to operator() with Value(t) each.
  Value call_tensors(std::span<const Tensor> args);
  /// Traces (or finds) the concrete function for these arguments without
  /// running it. ArgSpec leaves stand for tensors of that spec.
  std::shared_ptr<const ConcreteFunction> get_concrete_function(const std::vector<Value>& args);
  /// Number of traces so far (experimental_get_tracing_count).
  int64_t tracing_count() const;
  /// One record per retrace, oldest first.
  std::vector<RetraceReason> retrace_reasons() const;
  /// Every concrete function traced so far, oldest first.
  std::vector<std::shared_ptr<const ConcreteFunction>> concrete_functions() const;
  const FunctionOptions& options() const { return options_; }
  /// pretty_printed_concrete_signatures: every cached signature.
  std::string pretty_printed_concrete_signatures() const;

 private:
  void note_call(bool traced);
  // get_concrete_function's steps, in order.
  std::vector<Value> bind_input_signature(const std::vector<Value>& args) const;
  std::shared_ptr<const ConcreteFunction> find_cached(const detail::Flat& f, bool general) const;
  void check_not_recursive(const detail::Flat& f) const;
  std::unique_lock<std::recursive_mutex> lock_for_trace();
  std::vector<Shape> trace_shapes(const detail::Flat& f, bool& generalized) const;
  void record_retrace_reason(const detail::Flat& f);
  std::shared_ptr<ConcreteFunction> trace_new(const std::vector<Value>& call_args,
                                              const detail::Flat& f,
                                              const std::vector<Shape>& shapes, int& traces);
  std::shared_ptr<ConcreteFunction> trace_once(const std::vector<Value>& call_args,
                                               const detail::Flat& f,
                                               const std::vector<Shape>& shapes,
                                               bool allow_variables, int& created);
  void compile(ConcreteFunction& cf) const;
  void warn_if_all_pruned(const ConcreteFunction& cf) const;
  std::shared_ptr<const ConcreteFunction> remember(const detail::Flat& f,
                                                   std::shared_ptr<ConcreteFunction> cf,
                                                   bool generalized, int traces);
  // The call after the key was built: cache lookup, trace on a miss, run.
  // On a miss `args` (or else `tensor_args`) are the call's arguments.
  Value call_cached(std::span<const int64_t> key, std::span<const Tensor> tensors,
                    bool flat_tensors, const std::vector<Value>* args,
                    std::span<const Tensor> tensor_args);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Body body_;
  FunctionOptions options_;
};

}  // namespace kiln
