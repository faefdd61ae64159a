#include "fold.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "graph/uses.h"
#include "jit/ir/jit_ir.h"
#include "jit/ir/program.h"
#include "passes/pass_util.h"

namespace kiln::jit {
namespace {

using passes::spec_of;

bool combine_ok(OpId op) {
  return op == OpId::Add || op == OpId::Mul || op == OpId::Maximum || op == OpId::Minimum;
}

}  // namespace

// The form is read from the row's own lowering (OpDef::jit_lower) applied with the
// reduced dims moved last.
bool reduction_form(const Node* r, std::vector<bool>& reduced, Fold& f) {
  const OpDef& op = r->op();
  if (!op.jit_lower || r->inputs().size() != 1 || r->outputs().size() != 1 ||
      op.attr_index("axis") < 0 || op.attr_index("keepdims") < 0)
    return false;
  const TensorSpec in = spec_of(r->inputs()[0]);
  const DType dt = in.dtype;
  if (!foldable(dt) || !in.shape.rank_known() || in.shape.rank() < 1) return false;
  const int64_t rank = in.shape.rank();
  std::vector<int64_t> axes = attr_value<std::vector<int64_t>>(op, r->attrs(), "axis");
  if (axes.empty())  // no axes: every dim (a loss's mean)
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  reduced.assign(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    const int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank || reduced[static_cast<size_t>(n)]) return false;
    reduced[static_cast<size_t>(n)] = true;
  }
  const auto k = static_cast<int64_t>(axes.size());
  // The same reduction with the reduced dims last: a row reduction to lower.
  // (Unknown dims are given a size: only the form is read, and the runtime
  // counts the values.)
  std::vector<int64_t> dims;
  for (bool last : {false, true})
    for (int64_t d = 0; d < rank; ++d)
      if (reduced[static_cast<size_t>(d)] == last)
        dims.push_back(in.shape.dim(static_cast<int>(d)));
  for (int64_t& d : dims) d = d < 0 ? 2 : d;
  std::vector<int64_t> trailing;
  for (int64_t d = rank - k; d < rank; ++d) trailing.push_back(d);
  Attrs attrs = r->attrs();
  attrs[op.attr_at("axis")] = trailing;
  const std::vector<TensorSpec> ins = {TensorSpec{dt, Shape(dims)}};
  std::vector<Instr> body(1);
  body[0].kind = Instr::kLoad;
  body[0].dtype = dt;
  body[0].a = 0;
  const int32_t loaded = 0;
  LowerContext c(op, attrs, ins, r->outputs(), std::span<const int32_t>(&loaded, 1), body);
  if (!op.jit_lower(c) || body.size() < 2 || body[1].kind != Instr::kReduce || body[1].a != 0 ||
      !combine_ok(body[1].op) || c.results().size() != 1)
    return false;
  f.combine = body[1].op;
  f.init = body[1].bits;
  f.dims = k;
  f.outer = 0;
  f.keepdims = attr_value<bool>(op, r->attrs(), "keepdims");
  const int32_t res = c.results()[0];
  if (res == 1 && body.size() == 2) {
    f.mean = false;
    return true;
  }
  // A mean: the reduction divided by a constant (the count, which the
  // runtime takes from the shapes).
  const Instr& last_in = body.back();
  f.mean = res == static_cast<int32_t>(body.size() - 1) && body.size() == 4 &&
           body[2].kind == Instr::kConst && last_in.kind == Instr::kApply &&
           last_in.op == OpId::Div && last_in.a == 1 && last_in.b == 2;
  return f.mean;
}

bool fold_of(const Node* r, Fold& f) {
  std::vector<bool> folded;
  if (!reduction_form(r, folded, f)) return false;
  const auto rank = static_cast<int64_t>(folded.size());
  const int64_t k = f.dims;
  const auto k0 =
      static_cast<int64_t>(std::find(folded.begin(), folded.end(), true) - folded.begin());
  // One run of dims [k0, k0 + k): leading dims, every dim, or dims with kept
  // ones on both sides (not the trailing dims alone: those are rows).
  for (int64_t d = 0; d < rank; ++d)
    if (folded[static_cast<size_t>(d)] != (d >= k0 && d < k0 + k)) return false;
  if (k < 1 || (k0 > 0 && k0 + k == rank)) return false;
  f.outer = k0;
  return true;
}

std::vector<std::string> fold_reductions(Graph& g, Clusters& cl) {
  const Uses uses(g);
  const std::unordered_set<const Node*> outs = passes::output_nodes(g);
  auto readers = [&](const Node* n, int32_t i) { return uses.readers_of(n, i); };
  std::vector<std::string> notes;
  for (size_t ki = 0; ki < cl.kernel_nodes.size(); ++ki) {
    Node* k = cl.kernel_nodes[ki];
    const OpDef& op = k->op();
    const Program* before = attr_object<Program>(op, k->attrs(), "program");
    if (!before || before->product || before->kernel.reduced > 0) continue;
    auto prog = std::make_shared<Program>(*before);
    const int64_t rank = prog->kernel.rank;
    std::vector<TensorSpec> specs(k->outputs().begin(), k->outputs().end());
    const size_t n_out = prog->outputs.size();
    for (size_t o = 0; o < n_out && o < k->outputs().size(); ++o) {
      // Only outputs of the space's full shape (not relabelled ones) fold.
      if (prog->outputs[o].form != OutputRule::kSpace) continue;
      const auto oi = static_cast<int32_t>(o);
      // Outputs past the first are read through the Identity that kept the
      // member's name.
      Node* via = k;
      if (o > 0) {
        const std::vector<Node*> id = readers(k, oi);
        if (id.size() != 1 || id[0]->op().id != OpId::Identity) continue;
        via = id[0];
      }
      if (!via->control_inputs().empty()) continue;
      const std::vector<Node*> rs = readers(via, 0);
      // A value that only its reduction reads is replaced by the fold; one
      // read elsewhere too (a bias gradient's sum of a value the products
      // read) stays an output, and the fold is a copy of it.
      const bool alone = rs.size() == 1 && !outs.count(via);
      for (Node* r : rs) {
        Fold f;
        std::vector<Fold>& folds = prog->folds;
        if (!fold_of(r, f) || spec_of(r->inputs()[0]).shape.rank() != rank ||
            (!folds.empty() && (f.dims != folds[0].dims || f.outer != folds[0].outer)))
          continue;
        int32_t slot = oi;
        if (alone) {
          specs[o] = r->outputs()[0];
        } else {
          slot = static_cast<int32_t>(specs.size());
          specs.push_back(r->outputs()[0]);
          for (Kernel* kk : {&cl.kernels[ki], &prog->kernel}) kk->outputs.push_back(kk->outputs[o]);
          prog->outputs.push_back(prog->outputs[o]);
        }
        f.output = slot;
        folds.push_back(f);
        notes.push_back(str_cat("// ", prog->kernel.name, " output ", slot,
                                alone ? "" : str_cat(" (a copy of output ", o, ")"), " folded by ",
                                r->op().type_name, " '", r->name(), "' over ",
                                f.dims == rank ? "all its "
                                : f.outer == 0
                                    ? "its first "
                                    : str_cat("dims ", f.outer, " to ", f.outer + f.dims - 1, ", "),
                                f.dims, " dims (in blocks, in the runtime)\n"));
        r->reset(op_def(OpId::Identity), {Edge{k, slot}}, Attrs{}, {r->outputs()[0]});
        // The Identity that kept the member's name, now unread, reads the
        // fold too (so the graph verifies until prune drops it).
        if (alone && via != k)
          via->reset(op_def(OpId::Identity), {Edge{k, slot}}, Attrs{}, {r->outputs()[0]});
      }
    }
    if (prog->folds.empty()) continue;
    std::vector<Edge> ins(k->inputs().begin(), k->inputs().end());
    k->reset(op, std::move(ins), Attrs{AttrObjectRef(std::move(prog))}, std::move(specs));
  }
  return notes;
}

}  // namespace kiln::jit
