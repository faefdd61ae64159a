// FusedElementwise: a chain of float32 elementwise ops evaluated in one pass
// over the data (no intermediate tensors). Created by the fusion pass.
//
// attrs: program (ints, 3 per instruction: op id, register a, register b or
// -1). Registers 0..n-1 are the inputs; instruction j writes register n + j;
// the output is the last register. Inputs are float32 and either all of the
// output's shape or scalars (one element, broadcast).
#include "families.h"
#include "jit/ir/jit_ir.h"

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

// JitKernel: attrs ir (jit::Kernel::encode), signature (rank, reduced dims
// (then their product when > 0, -1 when unknown), n_out, then per output: dtype, count, the
// inputs it depends on -- or -1, rank and static dims for a cluster
// relabelled through a reshape, or -2, keepdims and the inputs for a
// per-row output;
// then per input the inner stride 0/1 the code is specialized for), kernel
// ("module/symbol"), maps (per input, the view it is read through, if any:
// jit::parse_input_maps; empty: no input mapped), product (empty, or the
// kernel input p that is a matrix product -- then the node's input p is its
// first operand and its last input the second -- and the two transposes: see
// jit::Product), work (the computing instructions per point, which scale the
// pool's grain), fold (outputs folded over their leading dims: jit::Fold). Output i has the
// broadcast shape of the inputs it depends on (for a per-row output with the reduced dims 1 or
// removed).

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

void infer_jit_kernel(InferContext& c) {
  const auto& sig = c.attr_ints("signature");
  size_t pos = 0;
  auto next = [&] {
    if (pos >= sig.size()) c.fail("signature is truncated");
    return sig[pos++];
  };
  const int64_t rank = next(), reduced = next();
  if (rank < 0 || rank > 16 || reduced < 0 || reduced > rank) c.fail("bad signature");
  if (reduced > 0 && next() < -1) c.fail("bad signature");  // -1: known at run time
  const int64_t n_out = next();
  if (n_out < 1 || n_out > 1 << 16) c.fail("bad signature");
  std::vector<jit::Fold> folds;
  if (!jit::parse_folds(c.attr_ints("fold"), static_cast<size_t>(n_out), rank, folds) ||
      (!folds.empty() && (reduced > 0 || !c.attr_ints("product").empty())))
    c.fail("fold is malformed");
  // A folded output loses its folded dims (or keeps them as 1s).
  const auto set = [&](int64_t o, DType dt, const Shape& s) {
    for (const jit::Fold& f : folds) {
      if (f.output != o) continue;
      if (!jit::foldable(dt))
        c.fail("a folded output must be float32, float64, int32 or int64, not ", dtype_name(dt));
      std::vector<int64_t> dims;
      for (int d = 0; d < s.rank(); ++d)
        if (d < f.outer || d >= f.outer + f.dims)
          dims.push_back(s.dim(d));
        else if (f.keepdims)
          dims.push_back(1);
      return c.set_output(static_cast<size_t>(o), dt, Shape(dims));
    }
    c.set_output(static_cast<size_t>(o), dt, s);
  };
  // A product: kernel input p is op(input p) x op(last input).
  const auto& product = c.attr_ints("product");
  Shape product_shape;
  size_t slot = 0, n_in = c.num_inputs();
  if (!product.empty()) {
    jit::Product how;
    if (!jit::parse_product(product, n_in, slot, how)) c.fail("product is malformed");
    --n_in;
    product_shape = product_result(c, slot, how);
  }
  jit::ViewRefs views;
  if (!jit::parse_input_maps(c.attr_ints("maps"), n_in, views)) c.fail("maps is malformed");
  if (!product.empty() && views[slot].mapped()) c.fail("the product is read through a view");
  std::vector<Shape> mapped;  // inputs read through a view, as the kernel reads them
  for (size_t i = 0; i < n_in; ++i) {
    if (!product.empty() && i == slot) {
      if (product_shape.rank() > rank) c.fail("the product has rank over the kernel's ", rank);
      continue;
    }
    const Shape& s = c.shape(i);
    if (!views[i].mapped()) {
      if (!s.rank_known() || s.rank() > rank)
        c.fail("input ", i, " must have a known rank <= ", rank);
      continue;
    }
    if (views[i].rank > rank)
      c.fail("input ", i, "'s view has rank ", views[i].rank, ", over the kernel's ", rank);
    int64_t dims[16];
    if (const std::string why = jit::view_dims(views[i], s, dims); !why.empty())
      c.fail("input ", i, ": ", why);
    mapped.resize(c.num_inputs());
    mapped[i] = Shape(std::vector<int64_t>(dims, dims + views[i].rank));
  }
  const auto in = [&](size_t i) -> const Shape& {
    if (!product.empty() && i == slot) return product_shape;
    return views[i].mapped() ? mapped[i] : c.shape(i);
  };
  const auto broadcast = [&](auto&& inputs) {
    Shape s(std::vector<int64_t>(static_cast<size_t>(rank), 1));
    for (int64_t k : inputs) {
      if (k < 0 || k >= static_cast<int64_t>(n_in)) c.fail("bad signature");
      s = broadcast_shapes(s, in(static_cast<size_t>(k)), "JitKernel");
    }
    return s;
  };
  for (int64_t o = 0; o < n_out; ++o) {
    const auto dt = static_cast<DType>(next());
    const int64_t n = next();
    if (n == -1) {  // a static shape (a cluster relabelled through a reshape)
      const int64_t r = next();
      if (r < 0 || r > 16) c.fail("bad signature");
      std::vector<int64_t> dims;
      for (int64_t j = 0; j < r; ++j) dims.push_back(next());
      for (int64_t d : dims)
        if (d < 0) c.fail("bad signature");
      c.set_output(static_cast<size_t>(o), dt, Shape(dims));
      continue;
    }
    if (n == -2) {  // per row: keepdims, then the inputs it depends on
      const int64_t keep = next(), n_deps = next();
      if (reduced == 0 || (keep != 0 && keep != 1) || n_deps < 0 ||
          n_deps > static_cast<int64_t>(n_in))
        c.fail("bad signature");
      std::vector<int64_t> deps;
      for (int64_t j = 0; j < n_deps; ++j) deps.push_back(next());
      const Shape space = broadcast(deps);
      std::vector<int64_t> dims;
      for (int64_t d = 0; d < rank; ++d)
        if (d < rank - reduced)
          dims.push_back(space.dim(static_cast<int>(d)));
        else if (keep)
          dims.push_back(1);
      c.set_output(static_cast<size_t>(o), dt, Shape(dims));
      continue;
    }
    if (n < 0 || n > static_cast<int64_t>(n_in)) c.fail("bad signature");
    std::vector<int64_t> deps;
    for (int64_t j = 0; j < n; ++j) deps.push_back(next());
    set(o, dt, broadcast(deps));
  }
  // Then the inner-loop pattern the kernel was built for: one 0/1/2 per input.
  if (sig.size() - pos != n_in) c.fail("signature does not match the inputs");
  for (; pos < sig.size(); ++pos)
    if (sig[pos] < 0 || sig[pos] > 2 || (sig[pos] == 2 && reduced > 0)) c.fail("bad signature");
}

// JitView: attr maps (one view, as a JitKernel input's: jit::parse_input_maps).
// The value read through the view; a broadcast operand's view where view
// sinking (src/jit/fusion/sink_views.h) moves a view onto the operands of the op it
// read. Hostile maps or a source that does not fit them are errors. Kernel:
// src/kernels/cpu/slicing.cpp.
void infer_jit_view(InferContext& c) {
  jit::ViewRefs refs;
  std::vector<int64_t> dims;
  jit::single_view(c, c.shape(0), refs, dims);
  c.set_output(0, c.dtype(0), Shape(dims));
}

bool jit_view_view(const jit::ViewQuery& q, jit::View& v) {
  jit::ViewRefs refs;
  if (!jit::parse_input_maps(attr_value<std::vector<int64_t>>(q.op, q.attrs, "maps"), 1, refs) ||
      !refs[0].mapped())
    return false;
  const jit::ViewRef& r = refs[0];
  v.start.assign(r.start, r.start + r.src_rank);
  v.dims.clear();
  for (int j = 0; j < r.rank; ++j)
    v.dims.push_back({r.dims[3 * j], r.dims[3 * j + 1], r.dims[3 * j + 2]});
  return true;
}

}  // namespace

void define_fused_ops(OpTableBuilder& t) {
  t.def(OpId::JitView)
      .inputs({"x"})
      .outputs({"y"})
      .attr("maps", AttrType::kInts)
      .traits(kGraphOnly | kPassOnly | kNoGradient)
      .infer(infer_jit_view)
      .jit_view(jit_view_view);
  t.def(OpId::JitKernel)
      .inputs({"inputs"})
      .outputs({"outputs"})
      .attr("ir", AttrType::kInts)
      .attr("signature", AttrType::kInts)
      .attr("kernel", AttrType::kString, std::string())
      .attr("maps", AttrType::kInts, std::vector<int64_t>{})
      .attr("product", AttrType::kInts, std::vector<int64_t>{})
      .attr("work", AttrType::kInt, int64_t{1})
      .attr("fold", AttrType::kInts, std::vector<int64_t>{})
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
