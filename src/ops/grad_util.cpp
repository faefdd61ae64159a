#include "grad_util.h"

#include <algorithm>

#include "front_util.h"
#include "kiln/ops.h"

namespace kiln::grad {

Tensor shape_of(const Tensor& x) {
  if (x.shape().is_fully_defined()) return int64_vector(x.shape().to_vector());
  return shape(x, DType::kInt64);
}

Tensor unbroadcast(const Tensor& g, const Tensor& x) {
  const Shape& gs = g.shape();
  const Shape& xs = x.shape();
  if (gs == xs) return g;
  if (!gs.rank_known() || !xs.rank_known())
    throw UnimplementedError("gradient: broadcasting over a tensor of unknown rank");
  const int64_t gr = gs.rank(), lead = gs.rank() - xs.rank();
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < gr; ++i) {
    if (i < lead) {
      axes.push_back(i);
      continue;
    }
    if (xs.dim(i - lead) == 1 && gs.dim(i) != 1) axes.push_back(i);
  }
  Tensor r = axes.empty() ? g : reduce_sum(g, axes);
  if (r.shape() == xs) return r;
  return reshape(r, shape_of(x));
}

std::vector<int64_t> reduction_axes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) out.push_back(a < 0 ? a + rank : a);
  std::sort(out.begin(), out.end());
  return out;
}

Tensor expand_reduced(const Tensor& g, const Tensor& x, const std::vector<int64_t>& axes) {
  const int64_t rank = x.shape().rank();
  // Shape with the reduced axes kept as 1; unknown dims taken from x.
  Tensor kept;
  if (x.shape().is_fully_defined()) {
    std::vector<int64_t> dims = x.shape().to_vector();
    for (int64_t a : axes) dims[static_cast<size_t>(a)] = 1;
    kept = int64_vector(dims);
  } else {
    Tensor s = shape(x, DType::kInt64);
    std::vector<int64_t> ones_mask(static_cast<size_t>(rank), 0);
    for (int64_t a : axes) ones_mask[static_cast<size_t>(a)] = 1;
    Tensor mask = int64_vector(ones_mask);
    kept = where(cast(mask, DType::kBool), Tensor(int64_t{1}), s);
  }
  return broadcast_to(reshape(g, kept), shape_of(x));
}

std::vector<int64_t> known_ints(const OpDef& op, const Tensor& t, const char* what) {
  const Tensor* v = &t;
  if (t.is_symbolic()) v = t.symbol()->constant_value(t.output_index());
  if (!v)
    throw UnimplementedError(str_cat(op.type_name, " gradient: ", what,
                                     " must be a constant (it is computed in the graph)"));
  std::vector<int64_t> out;
  if (v->dtype() == DType::kInt32)
    for (int32_t i : v->to_vector<int32_t>()) out.push_back(i);
  else
    out = v->to_vector<int64_t>();
  return out;
}

}  // namespace kiln::grad
