#include "tf_import.h"

namespace kiln::tf_import {

std::vector<Tensor> call_row(OpId id, std::vector<Tensor> inputs,
                             std::vector<std::pair<const char*, AttrValue>> named) {
  const OpDef& op = op_def(id);
  Attrs attrs(op.attrs.size());
  for (auto& [name, v] : named) attrs[op.attr_at(name)] = std::move(v);
  complete_attrs(op, attrs);
  return call_op(id, inputs, std::move(attrs));
}

}  // namespace kiln::tf_import
