#include "saved_model/tf_op_signatures.h"

#include <algorithm>
#include <cstring>

namespace kiln::saved_model::detail {
namespace {

const std::vector<TfOpSignature>& table() {
  static const std::vector<TfOpSignature> t = {
#include "saved_model/tf_op_signatures.inc"
  };
  return t;
}

// (name, count) of each output arg; a list arg takes what the others leave.
std::vector<std::pair<std::string, size_t>> layout(const OpDef& row, size_t n) {
  std::vector<std::pair<std::string, size_t>> out;
  if (const TfOpSignature* s = tf_signature(row.type_name)) {
    size_t lists = 0, singles = 0;
    for (const TfArg& a : s->outputs) (a.is_list() ? lists : singles) += 1;
    for (const TfArg& a : s->outputs)
      out.emplace_back(a.name, a.is_list() ? (lists == 1 && n >= singles ? n - singles : 0) : 1);
    return out;
  }
  if (row.outputs.size() == 1 || row.has(kVariadicOutput) || row.outputs.empty()) {
    out.emplace_back(row.outputs.empty() ? "output" : row.outputs[0], n);
    return out;
  }
  for (const char* name : row.outputs) out.emplace_back(name, 1);
  return out;
}

}  // namespace

bool TfOpSignature::has_attr(std::string_view name) const {
  return std::any_of(attrs.begin(), attrs.end(), [&](const char* a) { return name == a; });
}

const TfOpSignature* tf_signature(std::string_view op) {
  const auto& t = table();
  auto it = std::lower_bound(
      t.begin(), t.end(), op,
      [](const TfOpSignature& s, std::string_view o) { return std::string_view(s.op) < o; });
  return it != t.end() && op == it->op ? &*it : nullptr;
}

std::string tf_output_ref(const OpDef& row, size_t n_outputs, size_t flat) {
  size_t offset = 0;
  for (const auto& [name, count] : layout(row, n_outputs)) {
    if (flat < offset + count) return str_cat(name, ":", flat - offset);
    offset += count;
  }
  return str_cat("output:", flat);  // more outputs than the signature: kiln's own count
}

int64_t tf_flat_output(const OpDef& row, size_t n_outputs, const std::string& arg, int64_t index) {
  size_t offset = 0;
  for (const auto& [name, count] : layout(row, n_outputs)) {
    if (name == arg) return static_cast<int64_t>(offset) + index;
    offset += count;
  }
  return arg == "output" ? index : -1;
}

}  // namespace kiln::saved_model::detail
