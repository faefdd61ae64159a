// FusedElementwise: a chain of float32 elementwise ops evaluated in one pass
// over the data (no intermediate tensors). Created by the fusion pass.
//
// attrs: program (ints, 3 per instruction: op id, register a, register b or
// -1). Registers 0..n-1 are the inputs; instruction j writes register n + j;
// the output is the last register. Inputs are float32 and either all of the
// output's shape or scalars (one element, broadcast).
#include "families.h"
#include "jit/ir/jit_ir.h"
#include "jit/ir/program.h"

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

// Elements times the program's instruction count; the fused kernel splits
// from a quarter grain.
static OpCost fused_cost(const CostQuery& q) {
  const double base = q.elements();
  const auto& prog = attr_value<std::vector<int64_t>>(q.op, q.attrs, "program");
  const double instrs = static_cast<double>(prog.size() / 3);
  return {base * std::max(1.0, instrs), q.out_elements() > q.grain / 4};
}

// JitKernel: attr program (jit::Program: the kernel, its outputs' shape
// rules, views, product and folds). Output i has the broadcast shape of the
// inputs it depends on (a per-row output with the reduced dims 1 or removed,
// a folded one with its folded dims 1 or removed), or a fixed shape.

// The shape of op(input a) x op(last input) (jit::Product).
Shape product_result(InferContext& c, size_t a, const jit::Product& how) {
  const size_t b = c.num_inputs() - 1;
  int64_t dims[16];
  if (const std::string why =
          jit::product_dims(how, {c.dtype(a), c.shape(a)}, {c.dtype(b), c.shape(b)}, dims);
      !why.empty())
    c.fail(why);
  return Shape(std::span<const int64_t>(dims, static_cast<size_t>(c.shape(a).rank())));
}

// Kernel input i's shape as the kernel reads it: the product's result, the
// value read through its view, or the node's input.
std::vector<Shape> kernel_input_shapes(InferContext& c, const jit::Program& p) {
  const int64_t rank = p.kernel.rank;
  std::vector<Shape> in;
  for (size_t i = 0; i < p.num_kernel_inputs(); ++i) {
    const bool product = p.product && p.product->reads(i);
    if (!product && c.dtype(i) != p.kernel.inputs[i])
      c.fail("input ", i, " is ", dtype_name(c.dtype(i)), ", not the ",
             dtype_name(p.kernel.inputs[i]), " its kernel reads");
    const Shape s = product
                        ? product_result(c, static_cast<size_t>(p.product->slot), p.product->how)
                        : c.shape(i);
    if (!p.viewed(i)) {
      if (!s.rank_known() || s.rank() > rank)
        c.fail("input ", i, " must have a known rank <= ", rank);
      in.push_back(s);
      continue;
    }
    std::vector<int64_t> dims(p.views[i].dims.size());
    if (const std::string why = jit::view_dims(p.views[i], s, dims.data()); !why.empty())
      c.fail("input ", i, ": ", why);
    in.emplace_back(dims);
  }
  return in;
}

// Output o's shape with the folded dims of its fold (if any) 1 or removed.
Shape folded_shape(InferContext& c, const jit::Program& p, size_t o, DType dt, const Shape& s) {
  for (const jit::Fold& f : p.folds) {
    if (f.output != static_cast<int64_t>(o)) continue;
    if (!jit::foldable(dt))
      c.fail("a folded output must be float32, float64, int32 or int64, not ", dtype_name(dt));
    std::vector<int64_t> dims;
    for (int d = 0; d < s.rank(); ++d)
      if (d < f.outer || d >= f.outer + f.dims)
        dims.push_back(s.dim(d));
      else if (f.keepdims)
        dims.push_back(1);
    return Shape(dims);
  }
  return s;
}

void infer_jit_kernel(InferContext& c) {
  const auto& p = c.attr_object<jit::Program>("program");
  if (const std::string why = p.check(c.num_inputs()); !why.empty())
    c.fail("its program is inconsistent: ", why);
  const std::vector<Shape> in = kernel_input_shapes(c, p);
  const int rank = p.kernel.rank, reduced = p.kernel.reduced;
  const auto broadcast = [&](const std::vector<int32_t>& deps) {
    Shape s(std::vector<int64_t>(static_cast<size_t>(rank), 1));
    for (int32_t k : deps) s = broadcast_shapes(s, in[static_cast<size_t>(k)], "JitKernel");
    return s;
  };
  for (size_t o = 0; o < p.outputs.size(); ++o) {
    const jit::OutputRule& r = p.outputs[o];
    if (r.form == jit::OutputRule::kFixed) {
      c.set_output(o, r.dtype, Shape(r.dims));
    } else if (r.form == jit::OutputRule::kRow) {
      const Shape space = broadcast(r.deps);
      std::vector<int64_t> dims;
      for (int d = 0; d < rank; ++d)
        if (d < rank - reduced)
          dims.push_back(space.dim(d));
        else if (r.keepdims)
          dims.push_back(1);
      c.set_output(o, r.dtype, Shape(dims));
    } else {
      c.set_output(o, r.dtype, folded_shape(c, p, o, r.dtype, broadcast(r.deps)));
    }
  }
}

// JitView: attr view (jit::ViewAttr). The value read through the view; a
// broadcast operand's view where view sinking (src/jit/fusion/sink_views.h)
// moves a view onto the operands of the op it read. A source that does not
// fit it is an error. Kernel: src/kernels/cpu/slicing.cpp.
void infer_jit_view(InferContext& c) {
  const jit::View& v = c.attr_object<jit::ViewAttr>("view").view;
  if (const std::string why = jit::view_problem(v); !why.empty()) c.fail("its view: ", why);
  std::vector<int64_t> dims(v.dims.size());
  if (const std::string why = jit::view_dims(v, c.shape(0), dims.data()); !why.empty())
    c.fail("input 0 does not fit its view: ", why);
  c.set_output(0, c.dtype(0), Shape(dims));
}

bool jit_view_view(const jit::ViewQuery& q, jit::View& v) {
  const auto* a = attr_object<jit::ViewAttr>(q.op, q.attrs, "view");
  if (!a) return false;
  v = a->view;
  return true;
}

}  // namespace

void define_fused_ops(OpTableBuilder& t) {
  t.def(OpId::JitView)
      .inputs({"x"})
      .outputs({"y"})
      .attr("view", AttrType::kObject)
      .traits(kGraphOnly | kPassOnly | kNoGradient)
      .infer(infer_jit_view)
      .jit_view(jit_view_view);
  t.def(OpId::JitKernel)
      .inputs({"inputs"})
      .outputs({"outputs"})
      .attr("program", AttrType::kObject)
      .traits(kVariadicInput | kVariadicOutput | kGraphOnly | kPassOnly | kNoGradient)
      .cost([](const CostQuery& q) {
        return OpCost{q.elements(), q.out_elements() > q.grain};
      })
      .infer(infer_jit_kernel);
  t.def(OpId::FusedElementwise)
      .inputs({"inputs"})
      .outputs({"y"})
      .attr("program", AttrType::kInts)
      .traits(kElementwise | kVariadicInput | kGraphOnly | kPassOnly)
      .cost(fused_cost)
      .infer(infer_fused);
}

}  // namespace kiln
