// fold_constants: evaluate nodes whose inputs are constants (and shape-only
// ops of statically known shapes) once, at optimization time. Each node's
// shapes are inferred again first, from the values folded before it.
#include <limits>

#include "kiln/context.h"
#include "pass_util.h"

namespace kiln {
namespace {
using passes::const_of;
using passes::spec_of;

bool too_big(const Shape& s, int64_t max_elements) {
  return s.is_fully_defined() && s.num_elements() > max_elements;
}

// Shape/Size/Rank of a fully known static shape; false when not applicable.
bool eval_shape_only(const Node* n, std::vector<Tensor>& out) {
  if (n->inputs().size() != 1) return false;
  const Shape& s = spec_of(n->inputs()[0]).shape;
  if (n->op().id == OpId::Rank ? !s.rank_known() : !s.is_fully_defined()) return false;
  const DType out_type = n->outputs()[0].dtype;
  auto make = [&](const std::vector<int64_t>& v, bool scalar) -> bool {
    Shape shape = scalar ? Shape() : Shape({static_cast<int64_t>(v.size())});
    if (out_type == DType::kInt64) {
      out.push_back(Tensor::from_vector<int64_t>(v, shape));
      return true;
    }
    if (out_type != DType::kInt32) return false;
    std::vector<int32_t> v32;
    for (int64_t x : v) {
      if (x > std::numeric_limits<int32_t>::max()) return false;  // left to the kernel
      v32.push_back(static_cast<int32_t>(x));
    }
    out.push_back(Tensor::from_vector<int32_t>(v32, shape));
    return true;
  };
  switch (n->op().id) {
    case OpId::ShapeOf: return make(s.to_vector(), false);
    case OpId::Size: return make({s.num_elements()}, true);
    case OpId::Rank: return make({s.rank()}, true);
    default: return false;
  }
}

bool foldable(const Node* n) {
  const OpDef& op = n->op();
  if (op.has(kSource)) return false;
  if (op.has(kStateful) || op.has(kRandom) || !op.cpu_kernel || n->outputs().empty()) return false;
  for (const Node* c : n->control_inputs())
    if (c->op().has(kStateful)) return false;
  for (const TensorSpec& s : n->outputs())
    if (s.dtype == DType::kResource) return false;
  return true;
}

// Evaluates n; false (leaving n alone) when it cannot or should not fold.
bool evaluate(const Node* n, int64_t max_elements, std::vector<Tensor>& out) {
  for (const TensorSpec& s : n->outputs())
    if (too_big(s.shape, max_elements)) return false;
  if (n->op().has(kShapeOnly) && eval_shape_only(n, out)) return true;
  std::vector<Tensor> ins;
  ins.reserve(n->inputs().size());
  for (const Edge& e : n->inputs()) {
    const Tensor* v = const_of(e);
    if (!v || v->dtype() == DType::kResource) return false;
    ins.push_back(*v);
  }
  try {
    run_kernel(n->op(), ins, n->attrs(), out);
  } catch (const std::exception&) {
    // E.g. integer division by zero: the error is raised at run time instead.
    return false;
  }
  if (out.size() != n->outputs().size()) return false;
  for (size_t i = 0; i < out.size(); ++i) {
    const TensorSpec& s = n->outputs()[i];
    if (!out[i].defined() || out[i].dtype() != s.dtype ||
        !out[i].shape().is_compatible_with(s.shape) || out[i].num_elements() > max_elements)
      return false;
  }
  return true;
}

}  // namespace

PassResult fold_constants(Graph& g, int64_t max_elements) {
  PassResult r;
  r.pass = "fold_constants";
  passes::Rewirer rw(g);
  bool appended = false;
  const OpDef& const_op = op_def(OpId::Const);
  std::vector<Tensor> values;
  const auto preserved = passes::output_nodes(g);
  for (Node* n : passes::node_list(g)) {
    rw.update_inputs(n);
    // Shapes that folded inputs now tell (a Reshape to a folded shape
    // computation, as TensorFlow's einsum writes them) let later Shape ops fold.
    passes::refine_node(n);
    if (!foldable(n)) continue;
    values.clear();
    if (!evaluate(n, max_elements, values)) continue;
    if (values.size() == 1) {
      // In place, keeping the name (consumers and graph outputs stay wired).
      const char* before = n->op().type_name;
      TensorSpec spec{values[0].dtype(), values[0].shape()};
      n->reset(const_op, {}, Attrs{std::move(values[0])}, {std::move(spec)});
      r.rewritten.emplace_back(n->name(), str_cat(before, " -> Const"));
      continue;
    }
    if (preserved.count(n)) continue;  // a graph output keeps its node
    for (size_t i = 0; i < values.size(); ++i) {
      TensorSpec spec{values[i].dtype(), values[i].shape()};
      Node* c = g.add_node(const_op, {}, Attrs{values[i]}, {std::move(spec)},
                           str_cat(n->name(), "/folded_", i));
      r.added.emplace_back(c->name(), const_op.type_name);
      rw.replace({n, static_cast<int32_t>(i)}, {c, 0});
    }
    rw.remove(n, nullptr);
    appended = true;
  }
  rw.finish(r);
  // Constants added for multi-output nodes sit at the end: move each before
  // its first user.
  if (appended) g.sort_topologically();
  return r;
}

}  // namespace kiln
