// simplify: algebraic identities that remove or merge nodes.
#include <numeric>

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

}  // namespace

PassResult simplify(Graph& g) {
  PassResult r;
  r.pass = "simplify";
  passes::Rewirer rw(g);
  const auto preserved = passes::output_nodes(g);
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
      case OpId::Cast:
        if (std::get<DType>(n->attr("DstT")) == spec_of(n->inputs()[0]).dtype)
          bypass(n, n->inputs()[0]);
        break;
      case OpId::Mul:
      case OpId::Add:
      case OpId::Sub:
      case OpId::Div: {
        Edge x;
        if (neutral_operand(n, x)) bypass(n, x);
        break;
      }
      case OpId::Transpose: {
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
        bool is_identity = true;
        for (size_t i = 0; i < b.size(); ++i) {
          composed[i] = a[static_cast<size_t>(b[i])];
          is_identity &= composed[i] == static_cast<int64_t>(i);
        }
        if (is_identity && bypass(n, x)) break;
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
        if (spec_of(x).shape.is_fully_defined()) bypass(n, x);
        break;
      }
      default: break;
    }
  }
  rw.finish(r);
  return r;
}

}  // namespace kiln
