// Ops that only exist in graphs: Placeholder (a function argument).
#include "families.h"

namespace kiln {
namespace {

// attrs: dtype, shape (dims, -1 unknown), unknown_rank.
void infer_placeholder(InferContext& c) {
  const DType dt = c.attr_dtype("dtype");
  if (dt == DType::kInvalid) c.fail("dtype must be set");
  Shape s = c.attr_bool("unknown_rank") ? Shape::unknown_rank() : Shape(c.attr_ints("shape"));
  for (int64_t d : c.attr_ints("shape"))
    if (d < -1) c.fail("shape dims must be >= -1 (unknown), got ", d);
  c.set_output(0, dt, std::move(s));
}

}  // namespace

void define_graph_ops(OpTableBuilder& t) {
  t.def(OpId::Placeholder)
      .outputs({"output"})
      .attr("dtype", AttrType::kDType)
      .attr("shape", AttrType::kInts, std::vector<int64_t>{})
      .attr("unknown_rank", AttrType::kBool, false)
      .traits(kNoGradient | kSource | kGraphOnly)
      .infer(infer_placeholder);
}

}  // namespace kiln
