#include "node_rules.h"

#include "kernels/cpu/gemm.h"
#include "passes/pass_util.h"

namespace kiln::jit {

using passes::spec_of;

bool lower_node(const Node* n, std::span<const int32_t> in, std::vector<Instr>& body,
                std::vector<int32_t>& results, int* reduced) {
  std::vector<TensorSpec> ins;
  for (const Edge& e : n->inputs()) ins.push_back(spec_of(e));
  const size_t from = body.size();
  LowerContext c(n->op(), n->attrs(), ins, n->outputs(), in, body);
  if (!n->op().jit_lower(c) || c.reduced() < 0 || !halves_only_move(body, from) ||
      !no_complex_constants(body, from))
    return false;
  if (reduced) *reduced = c.reduced();
  results.assign(c.results().begin(), c.results().end());
  for (int32_t r : results)
    if (r < 0) return false;
  return true;
}

bool trial_lower(const Node* n, std::vector<Instr>& body, std::vector<int32_t>& results,
                 int& reduced) {
  body.assign(n->inputs().size(), Instr{});
  std::vector<int32_t> in(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    body[i].dtype = spec_of(n->inputs()[i]).dtype;
    body[i].a = static_cast<int32_t>(i);
    in[i] = static_cast<int32_t>(i);
  }
  return lower_node(n, in, body, results, &reduced);
}

namespace {
ViewQuery query_of(const Node* n, size_t i, std::vector<TensorSpec>& ins,
                   std::vector<const Tensor*>& values) {
  for (const Edge& e : n->inputs()) {
    ins.push_back(spec_of(e));
    values.push_back(passes::const_of(e));
  }
  return ViewQuery{n->op(), n->attrs(), ins, n->outputs(), values, i};
}
}  // namespace

bool product_of(const Node* n, Product& p) {
  if (!n->op().jit_product || n->inputs().size() != 2 || n->outputs().size() != 1) return false;
  // bfloat16 products run on oneDNN's kernels only where it has them (else
  // MatMul widens whole operands to float32).
  if (n->outputs()[0].dtype == DType::kBFloat16 && !cpu::bf16_gemm_native()) return false;
  std::vector<TensorSpec> ins;
  std::vector<const Tensor*> values;
  return n->op().jit_product(query_of(n, 0, ins, values), p);
}

bool view_of(const Node* n, size_t i, View& v) {
  if (!reads_in_place(n) || n->inputs().empty()) return false;
  std::vector<TensorSpec> ins;
  std::vector<const Tensor*> values;
  return n->op().jit_view(query_of(n, i, ins, values), v);
}

int contiguous_tail(const View& v, int64_t src_rank) {
  int t = 0;
  int64_t next = src_rank - 1;  // the source dim the next value dim must walk
  for (size_t j = v.dims.size(); j-- > 0; ++t) {
    const ViewDim& d = v.dims[j];
    if (d.src < 0 || d.size == 1) continue;  // one value: any stride
    if (d.src != next || d.step != 1) break;
    --next;
    if (d.size != -1) return t + 1;  // part of a dim: nothing outside it joins the run
  }
  return v.dims.empty() ? 16 : t;
}

bool one_run(const View& v, int64_t src_rank) {
  return contiguous_tail(v, src_rank) >= static_cast<int>(v.dims.size());
}

namespace {

// Value dims of more than one value that walk source dims [first, last] in
// order, as one dim of the layout (the runtime merges them: each steps over
// all of the next).
struct Walk {
  int64_t first, last, step;
  bool whole;  // reads all of source dim `first` (start 0, step 1)
};

// The view's walks, innermost first.
std::vector<Walk> walks(const View& v, const Shape& src) {
  std::vector<Walk> w;
  for (size_t j = v.dims.size(); j-- > 0;) {
    const ViewDim& d = v.dims[j];
    const int64_t n = d.src < 0 ? 1 : d.size >= 0 ? d.size : src.dim(static_cast<int>(d.src));
    if (n == 1) continue;
    const int64_t full = src.dim(static_cast<int>(d.src));
    const bool whole = d.step == 1 && v.start[static_cast<size_t>(d.src)] == 0 &&
                       (d.size == -1 || (full >= 0 && d.size == full));
    if (!w.empty() && d.step == 1 && w.back().step == 1 && w.back().whole &&
        d.src + 1 == w.back().first) {
      w.back().first = d.src;
      w.back().whole = whole;
      continue;
    }
    w.push_back({d.src, d.src, d.step, whole});
  }
  return w;
}

}  // namespace

bool strided_ok(const View& v, const Shape& src) {
  const std::vector<Walk> w = walks(v, src);
  if (w.size() >= 2 && w[1].last == src.rank() - 1 && w[1].step == 1) return true;
  for (size_t i = 1; i < w.size(); ++i)
    if (w[i].last >= w[i - 1].first) return false;
  return true;
}

}  // namespace kiln::jit
