// ONNX import rule for Einsum: kiln's einsum (src/ops/einsum.cpp).
#include "onnx/import.h"

namespace kiln::onnx::detail {

void einsum(ImportContext& c) {
  std::vector<Tensor> xs(c.inputs().begin(), c.inputs().end());
  try {
    c.set_output(0, kiln::einsum(c.attr_string("equation"), xs));
  } catch (const InvalidArgumentError& e) {
    c.fail(e.what());
  }
}

}  // namespace kiln::onnx::detail
