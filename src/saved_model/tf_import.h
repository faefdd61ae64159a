// Internal: SavedModels written by TensorFlow. Their FunctionDefs hold
// TensorFlow's ops (inputs named "node:output_arg:index"); each function is
// traced into a kiln function by importing its nodes with kiln's ops: through
// the op table's TensorFlow slot (OpDef::tf_direct / tf_import), the ops of
// TensorFlow that kiln builds from several of its own (tf_import_ops.cpp),
// and the structural ones here (Const, Identity, calls, If, While, variable
// reads and writes). Nested calls are inlined; If and While become kiln's
// cond and while_loop.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kiln/function.h"
#include "kiln/variable.h"
#include "ops/tf_import.h"
#include "saved_model/proto_io.h"

namespace kiln::saved_model::detail {

/// A value while a function is imported: a tensor, or a variable (TensorFlow's
/// DT_RESOURCE values are variables' handles).
struct TfValue {
  Tensor tensor;
  Variable variable;
  bool is_variable() const { return variable.defined(); }
};

/// How a TensorFlow op without a kiln row of its name imports: a rule over
/// kiln's ops, and its output args' names when it has several.
struct TfComposite {
  const char* op_type;
  TfImportFn fn;
  std::vector<const char*> outputs;  ///< empty: one output arg
};
/// TensorFlow's ops the importer itself handles (tf_import.cpp).
const std::set<std::string>& structural_ops();
/// The composite rule for `op_type`, or nullptr (tf_import_ops.cpp).
const TfComposite* find_tf_composite(const std::string& op_type);
/// Every composite rule (for the coverage table).
const std::vector<TfComposite>& tf_composites();

class TfImporter {
 public:
  /// `where` names the file in messages; function names must be unique.
  TfImporter(const pb::FunctionDefLibrary& lib, std::string where);

  /// One line per node whose op kiln cannot import ("Op: function f, node n"),
  /// over the functions `roots` reach.
  std::vector<std::string> missing_ops(const std::vector<std::string>& roots) const;

  /// Traces function `name` into a concrete function taking `inputs` (the
  /// structured arguments: specs, variables); its trailing args are bound to
  /// `captured` (variables, and assets' paths as string tensors); its flat outputs fill `outputs`
  /// (TensorSpec leaves).
  std::shared_ptr<const ConcreteFunction> concrete(const std::string& name,
                                                   const std::vector<Value>& inputs,
                                                   const std::vector<Value>& captured,
                                                   const Value& outputs,
                                                   FunctionOptions options) const;

  /// Imports `name`'s nodes with its args bound to `args`; its outputs.
  std::vector<TfValue> call(const std::string& name, const std::vector<TfValue>& args,
                            int depth) const;

  const pb::FunctionDef& def(const std::string& name) const;
  /// Whether `name` was saved with jit_compile (TensorFlow's _XlaMustCompile).
  bool jit(const std::string& name) const;
  const std::string& where() const { return where_; }

 private:
  std::map<std::string, const pb::FunctionDef*> defs_;
  std::string where_;
};

}  // namespace kiln::saved_model::detail
