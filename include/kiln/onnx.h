// ONNX export and import (docs/ONNX.md). Export writes a traced function as
// an ONNX model (opset 17 by default): variables become initializers, `None`
// dimensions symbolic ones, cond/while_loop If/Loop. Import reads an ONNX
// model, validating every count, size, dtype and shape, and traces it into a
// ConcreteFunction that runs through kiln's optimizer and executor (and
// jit_compile).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kiln/function.h"

namespace kiln::onnx {

/// The opset kiln writes by default, and the range it reads.
inline constexpr int kDefaultOpset = 17;
inline constexpr int kMinOpset = 7;
inline constexpr int kMaxOpset = 28;

struct ExportOptions {
  /// The default ("") domain's opset version to write (kMinOpset..kMaxOpset).
  int opset = kDefaultOpset;
  /// The graph's name in the model; the function's name when empty.
  std::string graph_name;
  /// Names of the graph's outputs; "output_0", ... when empty.
  std::vector<std::string> output_names;
};

/// The model proto's bytes for `cf`. InvalidArgumentError naming every op
/// (type and node) that has no ONNX mapping.
std::string export_bytes(const ConcreteFunction& cf, const ExportOptions& options = {});
/// Writes export_bytes(cf) to `path` (atomically: temporary file, rename).
void export_function(const ConcreteFunction& cf, const std::string& path,
                     const ExportOptions& options = {});

struct LoadOptions {
  /// Traced with jit_compile (as kiln.function(jit_compile=True)).
  bool jit_compile = false;
  /// The function's name; the model graph's name when empty.
  std::string name;
};

namespace detail {
class Tracer;
}

/// A loaded model: graph inputs (initializers excluded, in model order) in,
/// the graph outputs (in order) out. Most models are one ConcreteFunction,
/// traced at load. A model that uses a graph input as a shape, axes, pads or
/// sizes (kiln needs those values to build the graph) has `value_inputs`: it
/// is traced at the first call and again for each new value of those inputs,
/// as TensorFlow retraces a function for new Python values.
struct Model {
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  /// Inputs kiln reads by value (empty for most models).
  std::vector<std::string> value_inputs;
  int64_t ir_version = 0;
  int64_t opset = 0;  ///< the default domain's opset version
  std::string producer_name;
  /// The model's function when it has no value inputs, else nullptr.
  std::shared_ptr<const ConcreteFunction> function;

  /// The concrete function for these inputs (in input_names order): the
  /// model's function, or the trace for these values of the value inputs.
  /// Its arguments are the inputs that are not value inputs.
  std::shared_ptr<const ConcreteFunction> concrete_function(std::span<const Tensor> inputs) const;
  /// Runs the model on its inputs; returns the outputs in order.
  std::vector<Tensor> operator()(std::span<const Tensor> inputs) const;

  std::shared_ptr<detail::Tracer> tracer;  ///< internal: traces specializations
};

/// Loads a model from a file. NotFoundError when missing; InvalidArgumentError
/// (naming the file, node and problem) for malformed models, and for ops kiln
/// cannot import (every such op listed at once).
Model load(const std::string& path, const LoadOptions& options = {});
/// The same from a model proto's bytes; `where` names it in messages.
Model load_bytes(const std::string& bytes, const std::string& where = "<bytes>",
                 const LoadOptions& options = {});

/// ONNX op types (default domain) that load() can import, sorted.
std::vector<std::string> supported_import_ops();

}  // namespace kiln::onnx
