// Internal: TensorFlow's op signatures (tf_op_signatures.inc, generated from
// TensorFlow's registry by scripts/tf_op_signatures.py) for the ops kiln
// writes: how a FunctionDef names an op's outputs ("node:output_arg:index")
// and which type attributes (T, Tidx, Tin, N, ...) its nodes carry.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/op.h"

namespace kiln::saved_model::detail {

struct TfArg {
  const char* name;
  const char* type_attr;       ///< one tensor of this attr's type
  const char* number_attr;     ///< this many tensors (of type_attr's type)
  const char* type_list_attr;  ///< one tensor per type in this list
  int fixed;                   ///< a fixed DataType (0: none)
  bool is_list() const { return *number_attr || *type_list_attr; }
};

struct TfOpSignature {
  const char* op;
  std::vector<TfArg> inputs, outputs;
  std::vector<const char*> attrs;
  bool has_attr(std::string_view name) const;
};

/// TensorFlow's signature of op type `op`; nullptr when kiln has none.
const TfOpSignature* tf_signature(std::string_view op);

/// "arg:index" naming flat output `flat` of a node of `op` (kiln's row
/// `row`) with `n_outputs` outputs: TensorFlow's output args when it has the
/// op, else the row's output names.
std::string tf_output_ref(const OpDef& row, size_t n_outputs, size_t flat);

/// The flat output index "arg:index" names; -1 when `arg` is not an output.
int64_t tf_flat_output(const OpDef& row, size_t n_outputs, const std::string& arg, int64_t index);

}  // namespace kiln::saved_model::detail
