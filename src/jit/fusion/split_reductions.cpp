#include "split_reductions.h"

#include "jit/fusion/fold.h"
#include "jit/fusion/node_rules.h"
#include "passes/pass_util.h"

namespace kiln::jit {
namespace {

using passes::spec_of;

// The last run of reduced dims, when the reduced dims are more than one run.
bool last_run(const std::vector<bool>& reduced, int64_t& first, int64_t& end) {
  const auto rank = static_cast<int64_t>(reduced.size());
  int runs = 0;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[static_cast<size_t>(d)] && (d == 0 || !reduced[static_cast<size_t>(d - 1)])) {
      ++runs;
      first = d;
    }
  if (runs < 2) return false;
  end = first;
  while (end < rank && reduced[static_cast<size_t>(end)]) ++end;
  return true;
}

// Whether `p` computes its value in a kernel the part can join: a lowering
// that computes (not a view, a reshape or a pass-through).
bool computed(const Node* p) {
  return p->op().jit_lower && p->op().jit_lower != lower_identity && !reads_in_place(p) &&
         !is_relabel(p) && p->outputs().size() == 1 && p->control_inputs().empty();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> split_reductions(Graph& g) {
  std::vector<std::pair<std::string, std::string>> split;
  for (Node* r : passes::node_list(g)) {
    std::vector<bool> reduced;
    Fold f;
    int64_t first = 0, end = 0;
    if (!reduction_form(r, reduced, f) || !last_run(reduced, first, end) ||
        !computed(r->inputs()[0].node))
      continue;
    const TensorSpec& in = spec_of(r->inputs()[0]);
    // An integer mean rounds each part: a mean of means would round twice.
    if (f.mean && in.dtype != DType::kFloat32 && in.dtype != DType::kFloat64) continue;
    std::vector<int64_t> axes, dims;
    for (int64_t d = 0; d < in.shape.rank(); ++d) {
      const bool part = d >= first && d < end;
      if (part) axes.push_back(d);
      dims.push_back(part ? 1 : in.shape.dim(static_cast<int>(d)));
    }
    const OpDef& op = r->op();
    Attrs attrs = r->attrs();
    attrs[op.attr_at("axis")] = axes;
    attrs[op.attr_at("keepdims")] = true;
    Node* part = g.add_node(op, {r->inputs()[0]}, std::move(attrs),
                            {TensorSpec{r->outputs()[0].dtype, Shape(dims)}},
                            str_cat(r->name(), "/jit_part"));
    part->set_location(r->location());
    // The rest: the same reduction (its dims, keepdims) of the part, whose
    // reduced dims now have one value each.
    r->set_input(0, Edge{part, 0});
    split.emplace_back(part->name(), r->name());
  }
  if (!split.empty()) g.sort_topologically();
  return split;
}

void rejoin_parts(Graph& g, const std::vector<std::pair<std::string, std::string>>& splits) {
  for (const auto& [part_name, rest_name] : splits) {
    Node* part = g.find(part_name);
    Node* rest = g.find(rest_name);
    if (part && rest && &part->op() == &rest->op() && !rest->inputs().empty() &&
        rest->inputs()[0].node == part)
      rest->set_input(0, part->inputs()[0]);  // the part, now unread, is pruned
  }
}

}  // namespace kiln::jit
