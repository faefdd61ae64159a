// Internal: ONNX import. A rule per ONNX op type (default domain) builds the
// node's outputs from its inputs with kiln's ops while the model is traced
// into a kiln function, so inference, constant folding and the executor are
// kiln's own. Rules live in import_*.cpp, one table per family.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kiln/onnx.h"
#include "kiln/ops.h"
#include "onnx/onnx_io.h"

namespace kiln::onnx::detail {

/// Values by name while a graph is imported; a nested graph (an If branch, a
/// Loop body) looks names up in its enclosing graphs too.
///
/// A rank-4 value made by a channels-last kernel (Conv, pools) also keeps its
/// NHWC twin, transpose(value, {0, 2, 3, 1}): consumers that can work
/// channels-last (convolutions, pools, normalizations, elementwise ops) read
/// the twin, so the NCHW transposes between them are never used and the
/// optimizer prunes them.
class Scope {
 public:
  explicit Scope(const Scope* outer = nullptr) : outer_(outer) {}
  const Tensor* find(const std::string& name) const;
  void set(const std::string& name, Tensor t) { values_[name] = std::move(t); }
  /// The NHWC twin of a value, or nullptr.
  const Tensor* find_nhwc(const std::string& name) const;
  void set_nhwc(const std::string& name, Tensor t) { nhwc_[name] = std::move(t); }

 private:
  const Scope* outer_;
  std::map<std::string, Tensor> values_, nhwc_;
};

class ImportContext;
using ImportFn = void (*)(ImportContext&);
struct ImportRule {
  const char* op_type;
  ImportFn fn;
  /// Bit i: the rule reads input i by value (axes, sizes, pads). A graph
  /// input used there makes the model trace per value (Model::value_inputs).
  uint32_t value_inputs = 0;
};

/// What a rule sees: the node, its inputs (absent optional inputs are
/// undefined tensors), its attributes, the opset, and where it is (for
/// messages). Rules set every output.
class ImportContext {
 public:
  ImportContext(const pb::NodeProto& node, int64_t opset, std::vector<Tensor> inputs,
                std::string where, const Scope& scope);

  const pb::NodeProto& node() const { return node_; }
  int64_t opset() const { return opset_; }
  const std::string& where() const { return where_; }
  const Scope& scope() const { return scope_; }

  size_t num_inputs() const { return inputs_.size(); }
  /// Whether optional input i was given.
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].defined(); }
  /// Input i (an error naming the node when it is absent).
  const Tensor& input(size_t i) const;
  std::span<const Tensor> inputs() const { return inputs_; }
  /// Input i's value when it is known while tracing (an initializer, a
  /// Constant, or folded from them); nullptr otherwise.
  const Tensor* value(size_t i) const;
  /// Input i's values as int64s; an error when not known while tracing
  /// (`what` names the input for the message).
  std::vector<int64_t> ints(size_t i, const char* what) const;
  /// The same as doubles.
  std::vector<double> floats(size_t i, const char* what) const;

  bool has_attr(const char* name) const { return find(name) != nullptr; }
  int64_t attr_int(const char* name, std::optional<int64_t> def = std::nullopt) const;
  double attr_float(const char* name, std::optional<double> def = std::nullopt) const;
  std::string attr_string(const char* name, std::optional<std::string> def = std::nullopt) const;
  std::vector<int64_t> attr_ints(const char* name,
                                 std::optional<std::vector<int64_t>> def = std::nullopt) const;
  std::vector<double> attr_floats(const char* name) const;
  std::vector<std::string> attr_strings(const char* name) const;
  Tensor attr_tensor(const char* name) const;
  const pb::GraphProto& attr_graph(const char* name) const;

  size_t num_outputs() const { return static_cast<size_t>(node_.output_size()); }
  /// Whether output i is used (named) by the model.
  bool wants_output(size_t i) const {
    return i < num_outputs() && !node_.output(static_cast<int>(i)).empty();
  }
  void set_output(size_t i, Tensor t);
  std::vector<Tensor>& outputs() { return outputs_; }
  const std::vector<Tensor>& outputs() const { return outputs_; }

  /// Input i's NHWC twin (see Scope), or nullptr.
  const Tensor* nhwc_input(size_t i) const;
  /// Records output i's NHWC twin.
  void set_nhwc_output(size_t i, Tensor t);
  const std::vector<Tensor>& nhwc_outputs() const { return nhwc_outputs_; }
  /// True while a layout-transparent rule runs a second time on the NHWC
  /// twins (per-channel parameters then broadcast over the last axis).
  bool channels_last() const { return channels_last_; }
  void set_channels_last(bool v) { channels_last_ = v; }

  /// InvalidArgumentError "<where>: <message>".
  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    fail_message(str_cat(args...));
  }

 private:
  [[noreturn]] void fail_message(const std::string& m) const;
  /// Input i's known value cast to `dtype` (ints/floats read it).
  Tensor known_as(size_t i, const char* what, DType dtype) const;
  const pb::AttributeProto* find(const char* name) const;
  const pb::AttributeProto& get(const char* name, int type) const;
  const pb::NodeProto& node_;
  int64_t opset_;
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_, nhwc_outputs_;
  bool channels_last_ = false;
  std::string where_;
  const Scope& scope_;
};

/// The rule for an ONNX op type, or nullptr.
const ImportRule* find_import_rule(const std::string& op_type);
/// Every rule, sorted by op type.
std::vector<const ImportRule*> import_rules();

// The families' tables (import_elementwise.cpp, import_shape.cpp,
// import_nn.cpp, import_control.cpp).
std::span<const ImportRule> elementwise_import_rules();
std::span<const ImportRule> shape_import_rules();
std::span<const ImportRule> nn_import_rules();
std::span<const ImportRule> control_import_rules();

/// Einsum (import_einsum.cpp), listed in the nn family's table.
void einsum(ImportContext& c);

/// Imports `g`'s nodes into `scope` (inputs already bound there); returns
/// the graph outputs' tensors. Used for the main graph and nested bodies.
std::vector<Tensor> import_nodes(const pb::GraphProto& g, int64_t opset, Scope& scope,
                                 const std::string& where, int depth);

/// Traces a validated model into kiln functions: once, or once per value of
/// its value inputs.
class Tracer {
 public:
  Tracer(std::shared_ptr<const pb::ModelProto> model, std::map<std::string, Tensor> inits,
         std::vector<std::string> inputs, std::vector<ArgSpec> specs, std::vector<bool> by_value,
         int64_t opset, std::string where, const LoadOptions& options);
  std::shared_ptr<const ConcreteFunction> trace(std::span<const Tensor> inputs) const;
  bool has_value_inputs() const;

 private:
  Value body(const std::vector<Value>& args) const;
  std::shared_ptr<const pb::ModelProto> model_;
  std::map<std::string, Tensor> inits_;
  std::vector<std::string> inputs_;
  std::vector<ArgSpec> specs_;
  std::vector<bool> by_value_;
  int64_t opset_;
  std::string where_;
  std::unique_ptr<Function> fn_;
};

/// The axis `a` of a rank-`rank` tensor, negative counting from the end
/// (an error naming the node when out of range).
int64_t normalize_axis(const ImportContext& c, int64_t a, int64_t rank);
/// The rank of input i (an error when unknown).
int64_t known_rank(const ImportContext& c, size_t i);

}  // namespace kiln::onnx::detail
