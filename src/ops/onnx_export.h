// Internal: what an op row's ONNX export rule (OpDef::onnx) sees. Declared in
// the ops layer so rows can carry their rule, as jit::LowerContext is;
// implemented by the exporter (src/onnx/export.cpp). Values are named by
// strings (ONNX's value names); a rule emits nodes and binds every output of
// its kiln node, by emitting nodes whose outputs are out(i).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/op.h"

namespace kiln::onnx {

/// A nested ONNX graph (an If branch, a Loop body) being or already built.
struct GraphValue;
/// An ONNX attribute value: INT, FLOAT, STRING, INTS, FLOATS, TENSOR, GRAPH.
using Attr = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
                          Tensor, std::shared_ptr<const GraphValue>>;
using NamedAttrs = std::vector<std::pair<std::string, Attr>>;

class ExportContext : public OpCall {
 public:
  ExportContext(const OpDef& op, const Attrs& attrs) : OpCall(op, attrs) {}
  virtual ~ExportContext() = default;

  /// The kiln node's inputs and outputs: dtypes and (maybe partial) shapes.
  virtual size_t num_inputs() const = 0;
  virtual const TensorSpec& input_spec(size_t i) const = 0;
  virtual size_t num_outputs() const = 0;
  virtual const TensorSpec& output_spec(size_t i) const = 0;
  /// Input i's value when it is a constant of the graph; nullptr otherwise.
  virtual const Tensor* input_value(size_t i) const = 0;
  /// ONNX value names of input i and output i. A constant input becomes an
  /// initializer when in(i) is first asked for, so a rule that only reads
  /// input_value(i) (axes, begin, paddings) leaves none behind.
  virtual std::string in(size_t i) const = 0;
  virtual std::string out(size_t i) const = 0;
  /// The opset version being written.
  virtual int opset() const = 0;

  /// Adds `value` as an initializer; returns its name.
  virtual std::string constant(const Tensor& value) = 0;
  /// Emits one node. Its outputs are `outputs` when given, else fresh names
  /// (`num_outputs` of them); returns them.
  virtual std::vector<std::string> node(std::string_view op_type, std::vector<std::string> inputs,
                                        NamedAttrs attrs = {},
                                        std::vector<std::string> outputs = {},
                                        size_t num_outputs = 1) = 0;
  /// A node with one fresh output; returns its name.
  std::string node1(std::string_view op_type, std::vector<std::string> inputs,
                    NamedAttrs attrs = {}) {
    return node(op_type, std::move(inputs), std::move(attrs))[0];
  }
  /// A node whose outputs are this kiln node's outputs.
  void emit(std::string_view op_type, std::vector<std::string> inputs, NamedAttrs attrs = {}) {
    std::vector<std::string> outs;
    for (size_t i = 0; i < num_outputs(); ++i) outs.push_back(out(i));
    node(op_type, std::move(inputs), std::move(attrs), std::move(outs));
  }

  /// Emits the nodes of a body (a subgraph attribute) into the graph being
  /// built, its inputs bound to `inputs`; returns its outputs' names.
  virtual std::vector<std::string> inline_body(const Subgraph& body,
                                               const std::vector<std::string>& inputs) = 0;
  /// Starts a nested graph with these inputs (fresh names derived from the
  /// given ones, returned); nodes emitted until end_graph() go into it and
  /// may read values of the enclosing graphs. A kResource input takes the
  /// sequence type of the value its given name names (set_sequence).
  virtual std::vector<std::string> begin_graph(
      const std::vector<std::pair<std::string, TensorSpec>>& inputs) = 0;
  /// Ends the nested graph with these outputs (specs for its value infos).
  virtual std::shared_ptr<const GraphValue> end_graph(
      const std::vector<std::pair<std::string, TensorSpec>>& outputs) = 0;

  /// Marks `value` as an ONNX sequence of tensors like `element` (what a
  /// TensorList handle becomes). begin_graph/end_graph give kResource
  /// inputs and outputs the sequence type of the value they name; an
  /// Identity of a sequence is one.
  virtual void set_sequence(const std::string& value, const TensorSpec& element) = 0;
  /// The element spec of a sequence value; nullptr for other values.
  virtual const TensorSpec* sequence(const std::string& value) const = 0;

  /// The export fails: InvalidArgumentError naming the node and `why`.
  [[noreturn]] virtual void unsupported(std::string_view why) const = 0;

  // Helpers for rules (built on the interface above; the non-inline ones are
  // defined with the exporter, src/onnx/export.cpp).

  /// An int64 vector initializer (shapes, axes, pads as ONNX inputs).
  std::string ints(const std::vector<int64_t>& v) {
    return constant(Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())}));
  }
  /// A scalar initializer of `dtype` holding `v`.
  std::string scalar(double v, DType dtype);
  /// Input i's constant value as int64s (int32/int64 constants); false when
  /// the input is not a constant.
  bool input_ints(size_t i, std::vector<int64_t>& out) const {
    const Tensor* t = input_value(i);
    if (!t || (t->dtype() != DType::kInt32 && t->dtype() != DType::kInt64)) return false;
    out.clear();
    for (int64_t k = 0; k < t->num_elements(); ++k)
      out.push_back(t->dtype() == DType::kInt32 ? int64_t{t->data<int32_t>()[k]}
                                                : t->data<int64_t>()[k]);
    return true;
  }
  /// ONNX's TensorProto.DataType of `t` (Cast's `to`).
  static int64_t onnx_dtype(DType t);
  /// `v` cast to `to` (a Cast node), or `v` when `from == to`.
  std::string cast(const std::string& v, DType from, DType to);
  /// The rank of input i; unsupported() when it is unknown.
  int64_t input_rank(size_t i) const {
    const Shape& s = input_spec(i).shape;
    if (!s.rank_known()) unsupported(str_cat("input ", i, " has an unknown rank"));
    return s.rank();
  }
};

}  // namespace kiln::onnx
