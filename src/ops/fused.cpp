// FusedElementwise: a chain of float32 elementwise ops evaluated in one pass
// over the data (no intermediate tensors). Created by the fusion pass.
//
// attrs: program (ints, 3 per instruction: op id, register a, register b or
// -1). Registers 0..n-1 are the inputs; instruction j writes register n + j;
// the output is the last register. Inputs are float32 and either all of the
// output's shape or scalars (one element, broadcast).
#include "families.h"

namespace kiln {
namespace {

void infer_fused(InferContext& c) {
  const auto& prog = c.attr_ints("program");
  const int64_t n_in = static_cast<int64_t>(c.num_inputs());
  if (prog.empty() || prog.size() % 3 != 0) c.fail("program must be non-empty triples");
  Shape out = Shape();
  Shape one = Shape();  // all inputs single-element: [1] wins over [] (broadcasting)
  bool have = false;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    c.expect_dtype(i, DType::kFloat32);
    const Shape& s = c.shape(i);
    if (s.is_fully_defined() && s.num_elements() == 1 && s.rank() <= 1) {
      if (s.rank() > one.rank()) one = s;
      continue;
    }
    if (!have) {
      out = s;
      have = true;
    } else if (!(s == out)) {
      c.fail("inputs must share one shape or be scalars, got ", out, " and ", s);
    }
  }
  for (size_t k = 0; k < prog.size(); k += 3) {
    const int64_t reg_limit = n_in + static_cast<int64_t>(k / 3);
    const int64_t op = prog[k], a = prog[k + 1], b = prog[k + 2];
    if (op < 0 || op >= static_cast<int64_t>(kNumOps) || !op_def(static_cast<OpId>(op)).block_f32)
      c.fail("instruction ", k / 3, " uses an op that cannot be fused");
    if (a < 0 || a >= reg_limit || b < -1 || b >= reg_limit)
      c.fail("instruction ", k / 3, " reads a register that is not yet written");
    const size_t arity = op_def(static_cast<OpId>(op)).inputs.size();
    if ((arity == 2) != (b >= 0)) c.fail("instruction ", k / 3, " has the wrong arity");
  }
  c.set_output(0, DType::kFloat32, have ? out : one);
}

}  // namespace

// Elements times the program's instruction count; the fused kernel splits
// from a quarter grain.
static OpCost fused_cost(const CostQuery& q) {
  const double base = q.elements();
  const auto& prog = attr_value<std::vector<int64_t>>(q.op, q.attrs, "program");
  const double instrs = static_cast<double>(prog.size() / 3);
  return {base * std::max(1.0, instrs), q.out_elements() > q.grain / 4};
}

void define_fused_ops(OpTableBuilder& t) {
  t.def(OpId::FusedElementwise)
      .inputs({"inputs"})
      .outputs({"y"})
      .attr("program", AttrType::kInts)
      .traits(kElementwise | kVariadicInput | kGraphOnly)
      .cost(fused_cost)
      .infer(infer_fused);
}

}  // namespace kiln
