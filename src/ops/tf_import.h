// Internal: what a row's TensorFlow import rule (OpDef::tf_import) sees: one
// node of a FunctionDef TensorFlow wrote, its inputs as kiln tensors (traced),
// its attributes in TensorFlow's names. Declared in the ops layer so rows can
// carry their rule, as onnx::ExportContext is; implemented by the importer
// (src/saved_model/tf_import.cpp). A rule computes the node's outputs with
// kiln's ops, in TensorFlow's output order.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/context.h"
#include "kiln/op.h"
#include "kiln/tensor.h"

namespace kiln::tf_import {

class Context {
 public:
  virtual ~Context() = default;

  /// The node's op type ("Sum") and name, for messages.
  virtual const std::string& op_type() const = 0;
  virtual size_t num_inputs() const = 0;
  virtual const Tensor& input(size_t i) const = 0;
  /// Input i's values when known while loading (a Const, or folded from
  /// Consts); an error naming `what` otherwise.
  virtual std::vector<int64_t> ints(size_t i, const char* what) const = 0;

  virtual bool has_attr(const std::string& name) const = 0;
  virtual int64_t attr_int(const std::string& name, std::optional<int64_t> def = {}) const = 0;
  virtual bool attr_bool(const std::string& name, std::optional<bool> def = {}) const = 0;
  virtual double attr_float(const std::string& name, std::optional<double> def = {}) const = 0;
  virtual std::string attr_string(const std::string& name,
                                  std::optional<std::string> def = {}) const = 0;
  virtual DType attr_type(const std::string& name) const = 0;
  virtual std::vector<int64_t> attr_ints(const std::string& name,
                                         std::optional<std::vector<int64_t>> def = {}) const = 0;

  /// Sets the node's outputs (TensorFlow's flat output order).
  virtual void set_outputs(std::vector<Tensor> outputs) = 0;
  void set_output(Tensor t) { set_outputs({std::move(t)}); }
  /// An InvalidArgumentError naming the node.
  [[noreturn]] virtual void fail(const std::string& message) const = 0;
};

/// Calls row `id` with `inputs` and the attributes named (the others at their
/// defaults): how rules call the row they belong to.
std::vector<Tensor> call_row(OpId id, std::vector<Tensor> inputs,
                             std::vector<std::pair<const char*, AttrValue>> attrs);
inline Tensor call_row1(OpId id, std::vector<Tensor> inputs,
                        std::vector<std::pair<const char*, AttrValue>> attrs) {
  return call_row(id, std::move(inputs), std::move(attrs)).at(0);
}

}  // namespace kiln::tf_import
