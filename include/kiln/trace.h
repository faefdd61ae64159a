// Tracing: while a TracingContext is current (ContextScope), every op call
// records a node in a Graph instead of running. Results are symbolic tensors
// that know their dtype and static shape but cannot be read.
#pragma once
#include <string>
#include <unordered_map>

#include "kiln/context.h"
#include "kiln/graph.h"

namespace kiln {

class TracingContext final : public ExecutionContext {
 public:
  /// Records into `graph`. `outer` is the enclosing trace (a control-flow
  /// body traced inside a function), whose symbolic tensors may be captured.
  explicit TracingContext(Graph& graph, TracingContext* outer = nullptr);
  ~TracingContext() override;

  void execute(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
               std::vector<Tensor>& outputs) override;
  bool is_tracing() const override { return true; }

  Graph& graph() { return graph_; }
  TracingContext* outer() const { return outer_; }

  /// Adds a graph input (Placeholder node named after the argument) and
  /// returns its symbolic tensor.
  Tensor add_input(std::string_view name, DType dtype, const Shape& shape);

  /// The edge for `t` in this graph: its own node output; a Const node for a
  /// concrete tensor (deduplicated); for a symbolic tensor of an enclosing
  /// trace, a capture placeholder (see captures()). A symbolic tensor from
  /// any other graph raises InvalidArgumentError naming its node and
  /// function ("captured an external symbolic tensor").
  Edge edge_for(const Tensor& t);

  /// Captures of outer symbolic tensors: (outer tensor, inner placeholder).
  const std::vector<std::pair<Tensor, Node*>>& captures() const { return captures_; }

  /// The last stateful node recorded (automatic control dependencies chain
  /// every stateful op after the previous one, in program order).
  Node* last_stateful() const { return last_stateful_; }

  /// Optional source location attached to nodes created from now on.
  void set_location(std::string loc) { location_ = std::move(loc); }
  /// A trace for jit_compile: each new node gets its user line from the
  /// location provider (its errors name lines; ~0.7 us a node in Python),
  /// and the control-flow bodies traced inside it are compiled too. Traces
  /// started inside this one inherit it.
  void set_jit(bool on) { jit_ = on; }
  bool jit() const { return jit_; }

  /// The current name-scope prefix ("" or "layer/"): nodes created from now
  /// on are named "<prefix><op node name>" (see NameScope).
  const std::string& name_scope() const { return name_scope_; }
  void set_name_scope(std::string prefix) { name_scope_ = std::move(prefix); }

  /// The innermost TracingContext of this thread, or nullptr when eager.
  static TracingContext* current();

  /// Where in user code an op call comes from ("file:line"), asked for each
  /// node of a trace that records locations and has no set_location. A
  /// binding sets it once (Python: the innermost frame outside the kiln
  /// package); "" when unknown.
  using LocationProvider = std::string (*)();
  static void set_location_provider(LocationProvider p);

 private:
  Graph& graph_;
  TracingContext* outer_;
  std::unordered_map<const detail::TensorImpl*, Node*> constants_;
  std::vector<Tensor> constant_keepalive_;
  std::vector<std::pair<Tensor, Node*>> captures_;
  Node* last_stateful_ = nullptr;
  std::string location_;
  std::string name_scope_;
  bool jit_ = false;
};

/// TensorFlow's tf.name_scope while tracing: nodes created inside are named
/// "<scope>/<name>", the scope made unique in the graph ("dense", "dense_1")
/// and nested scopes joined. Eagerly it does nothing (scope() is "").
class NameScope {
 public:
  explicit NameScope(std::string_view name);
  ~NameScope();
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;
  /// The full scope with a trailing '/', or "" when not tracing.
  const std::string& scope() const { return scope_; }

 private:
  TracingContext* tc_ = nullptr;
  std::string saved_, scope_;
};

/// Runs the enclosed code eagerly, outside any graph being traced, once at
/// trace time (TensorFlow's tf.init_scope): e.g. to create a variable.
class InitScope {
 public:
  InitScope() : scope_(EagerContext::instance()) {}

 private:
  ContextScope scope_;
};

}  // namespace kiln
