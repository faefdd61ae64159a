// simplify: algebraic identities that remove or merge nodes, and batched
// products folded through Reshapes back to their own batch dims.
#include <numeric>
#include <optional>

#include "pass_util.h"

namespace kiln {
namespace {
using passes::const_of;
using passes::spec_of;

// True when every element of c equals v (numeric dtypes only).
bool all_equal(const Tensor& c, double v) {
  auto check = [&](const auto* p) {
    for (int64_t i = 0; i < c.num_elements(); ++i)
      if (static_cast<double>(p[i]) != v) return false;
    return true;
  };
  switch (c.dtype()) {
    case DType::kInt8: return check(c.data<int8_t>());
    case DType::kUInt8: return check(c.data<uint8_t>());
    case DType::kInt32: return check(c.data<int32_t>());
    case DType::kInt64: return check(c.data<int64_t>());
    case DType::kFloat32: return check(c.data<float>());
    case DType::kFloat64: return check(c.data<double>());
    default: return false;
  }
}

// Broadcasting x against a constant of shape c leaves x's shape unchanged:
// the constant has no more dims than x and each of its dims is 1 or x's
// (known) dim.
bool neutral_shape(const Shape& c, const Shape& x) {
  if (c.rank() == 0) return true;
  if (!x.rank_known() || c.rank() > x.rank()) return false;
  const int64_t off = x.rank() - c.rank();
  for (int64_t i = 0; i < c.rank(); ++i)
    if (c.dim(i) != 1 && c.dim(i) != x.dim(off + i)) return false;
  return true;
}

// The operand that op(x, const) or op(const, x) returns unchanged, if any.
bool neutral_operand(const Node* n, Edge& x) {
  if (n->inputs().size() != 2) return false;
  double unit;
  bool left_ok;  // may the constant be on the left?
  switch (n->op().id) {
    case OpId::Mul: unit = 1, left_ok = true; break;
    case OpId::Add: unit = 0, left_ok = true; break;
    case OpId::Sub: unit = 0, left_ok = false; break;
    case OpId::Div: unit = 1, left_ok = false; break;
    default: return false;
  }
  for (int side = 1; side >= (left_ok ? 0 : 1); --side) {
    const Tensor* c = const_of(n->inputs()[static_cast<size_t>(side)]);
    const Edge other = n->inputs()[static_cast<size_t>(1 - side)];
    if (!c || !is_numeric(c->dtype()) || c->dtype() != spec_of(other).dtype) continue;
    if (!neutral_shape(c->shape(), spec_of(other).shape) || !all_equal(*c, unit)) continue;
    x = other;
    return true;
  }
  return false;
}

std::vector<int64_t> full_perm(const std::vector<int64_t>& perm, int64_t rank) {
  if (!perm.empty()) return perm;
  std::vector<int64_t> p(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) p[static_cast<size_t>(i)] = rank - 1 - i;
  return p;
}

bool same_spec(const TensorSpec& a, const TensorSpec& b) {
  return a.dtype == b.dtype && a.shape == b.shape;
}

// perm (given in full) keeps every dim in place.
bool is_identity_perm(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// The tensor whose leading dims a Reshape at `e` folds into its one batch dim
// (rank 3 -> rank of `batch` + 2), keeping the last two dims; nullopt if `e`
// is no such Reshape.
std::optional<Edge> unfolded_batch(Edge e, const std::vector<int64_t>& batch) {
  const Node* r = e.node;
  if (r->op().id != OpId::Reshape || !r->control_inputs().empty()) return std::nullopt;
  const Edge x = r->inputs()[0];
  const Shape& in = spec_of(x).shape;
  const Shape& out = spec_of(e).shape;
  const auto k = static_cast<int64_t>(batch.size());
  if (!in.is_fully_defined() || !out.is_fully_defined() || in.rank() != k + 2) return std::nullopt;
  for (int64_t i = 0; i < k; ++i)
    if (in.dim(i) != batch[static_cast<size_t>(i)]) return std::nullopt;
  if (in.dim(k) != out.dim(1) || in.dim(k + 1) != out.dim(2)) return std::nullopt;
  return x;
}

// Reshape(MatMul(Reshape(a), Reshape(b))) where the inner Reshapes fold the
// same leading dims of a and b into one batch dim and the outer one unfolds
// them (TensorFlow's einsum writes attention this way): MatMul(a, b) over
// those batch dims, when nothing else reads the product. The inner nodes are
// left to prune.
bool batched_product(Node* n, const passes::NodeUses& uses) {
  const Node* m = n->inputs()[0].node;
  // n alone reads the product (as the graph stood: a product read elsewhere
  // too, or through a bypassed Identity, would be computed twice).
  if (m->op().id != OpId::MatMul || !m->control_inputs().empty() || !uses.interior(m) ||
      uses.users(m)[0] != n)
    return false;
  const Shape& out = n->outputs()[0].shape;
  const Shape& prod = m->outputs()[0].shape;
  if (!out.is_fully_defined() || !prod.is_fully_defined() || prod.rank() != 3 || out.rank() < 4 ||
      out.dim(out.rank() - 2) != prod.dim(1) || out.dim(out.rank() - 1) != prod.dim(2))
    return false;
  const std::vector<int64_t> dims = out.to_vector();
  const std::vector<int64_t> batch(dims.begin(), dims.end() - 2);
  const std::optional<Edge> a = unfolded_batch(m->inputs()[0], batch);
  const std::optional<Edge> b = unfolded_batch(m->inputs()[1], batch);
  if (!a || !b) return false;
  n->reset(m->op(), {*a, *b}, m->attrs(), {n->outputs()[0]});
  return true;
}

// Whether every value of float type `narrow` is exactly a value of `wide`.
bool widens_exactly(DType narrow, DType wide) {
  return (is_half(narrow) && (wide == DType::kFloat32 || wide == DType::kFloat64)) ||
         (narrow == DType::kFloat32 && wide == DType::kFloat64);
}

}  // namespace

PassResult simplify(Graph& g) {
  PassResult r;
  r.pass = "simplify";
  passes::Rewirer rw(g);
  const auto preserved = passes::output_nodes(g);
  const passes::NodeUses uses(g);  // as the graph stood before the pass
  // Replaces n's only output by x (same spec) and drops n.
  auto bypass = [&](Node* n, Edge x) {
    if (preserved.count(n) || !n->control_inputs().empty() ||
        !same_spec(spec_of(x), n->outputs()[0]))
      return false;
    rw.replace({n, 0}, x);
    rw.remove(n, x.node);
    return true;
  };
  for (Node* n : passes::node_list(g)) {
    rw.update_inputs(n);
    if (n->outputs().size() != 1 || n->op().has(kStateful)) continue;
    switch (n->op().id) {
      case OpId::Identity: bypass(n, n->inputs()[0]); break;
      case OpId::Cast: {
        const DType to = std::get<DType>(n->attr("DstT"));
        const Edge in = n->inputs()[0];
        if (to == spec_of(in).dtype) {
          bypass(n, in);
          break;
        }
        // A float widened and narrowed back to its type is itself (mixed
        // precision's bf16 -> float32 -> bf16): the widening is exact.
        const Node* w = in.node;
        if (w->op().id == OpId::Cast && w->control_inputs().empty() &&
            spec_of(w->inputs()[0]).dtype == to && widens_exactly(to, spec_of(in).dtype))
          bypass(n, w->inputs()[0]);
        break;
      }
      case OpId::Mul:
      case OpId::Add:
      case OpId::Sub:
      case OpId::Div: {
        Edge x;
        if (neutral_operand(n, x)) bypass(n, x);
        break;
      }
      case OpId::Transpose: {
        const auto& own = std::get<std::vector<int64_t>>(n->attr("perm"));  // empty: reversed
        if (!own.empty() && is_identity_perm(own) && bypass(n, n->inputs()[0])) break;
        const Node* inner = n->inputs()[0].node;
        if (inner->op().id != OpId::Transpose || !inner->control_inputs().empty()) break;
        const Edge x = inner->inputs()[0];
        const auto& p_in = std::get<std::vector<int64_t>>(inner->attr("perm"));
        const auto& p_out = std::get<std::vector<int64_t>>(n->attr("perm"));
        const int64_t rank = !p_in.empty()    ? static_cast<int64_t>(p_in.size())
                             : !p_out.empty() ? static_cast<int64_t>(p_out.size())
                                              : spec_of(x).shape.rank();
        if (rank < 0) break;  // default perms on an unknown rank
        const std::vector<int64_t> a = full_perm(p_in, rank), b = full_perm(p_out, rank);
        // out[i] = inner[b[i]] = x[a[b[i]]]
        std::vector<int64_t> composed(b.size());
        for (size_t i = 0; i < b.size(); ++i) composed[i] = a[static_cast<size_t>(b[i])];
        if (is_identity_perm(composed) && bypass(n, x)) break;
        n->set_input(0, x);
        n->set_attrs(Attrs{std::move(composed)});
        r.rewritten.emplace_back(n->name(), "Transpose(Transpose(x)) -> Transpose(x)");
        break;
      }
      case OpId::Reshape: {
        const Node* inner = n->inputs()[0].node;
        if (inner->op().id == OpId::Reshape && inner->control_inputs().empty()) {
          n->set_input(0, inner->inputs()[0]);
          r.rewritten.emplace_back(n->name(), "Reshape(Reshape(x)) -> Reshape(x)");
        }
        const Edge x = n->inputs()[0];
        if (spec_of(x).shape.is_fully_defined() && bypass(n, x)) break;
        if (!n->control_inputs().empty() || !batched_product(n, uses)) break;
        r.rewritten.emplace_back(n->name(),
                                 "Reshape(MatMul(Reshape(a), Reshape(b))) -> MatMul(a, b)");
        break;
      }
      default: break;
    }
  }
  rw.finish(r);
  return r;
}

}  // namespace kiln
