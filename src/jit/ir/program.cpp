#include "program.h"

#include <algorithm>
#include <limits>

namespace kiln::jit {
namespace {

constexpr int64_t kMaxRank = 16;

bool fold_combine(OpId op) {
  return op == OpId::Add || op == OpId::Mul || op == OpId::Maximum || op == OpId::Minimum;
}

std::string check_outputs(const Program& p) {
  const Kernel& k = p.kernel;
  if (p.outputs.empty() || p.outputs.size() != k.outputs.size())
    return "its outputs do not match its kernel's";
  const auto n_in = static_cast<int32_t>(p.num_kernel_inputs());
  for (size_t o = 0; o < p.outputs.size(); ++o) {
    const OutputRule& r = p.outputs[o];
    for (int32_t d : r.deps)
      if (d < 0 || d >= n_in) return str_cat("output ", o, " depends on no input");
    if (r.form == OutputRule::kRow && k.reduced == 0)
      return str_cat("output ", o, " is per row of a kernel that reduces nothing");
    if (r.form == OutputRule::kFixed &&
        (static_cast<int64_t>(r.dims.size()) > kMaxRank ||
         std::any_of(r.dims.begin(), r.dims.end(), [](int64_t d) { return d < 0; })))
      return str_cat("output ", o, "'s fixed shape");
  }
  return {};
}

std::string check_folds(const Program& p) {
  const int64_t rank = p.kernel.rank;
  std::vector<bool> seen(p.outputs.size());
  for (const Fold& f : p.folds) {
    if (f.output < 0 || f.output >= static_cast<int64_t>(seen.size()) ||
        seen[static_cast<size_t>(f.output)] || !fold_combine(f.combine) || f.dims < 1 ||
        f.dims > rank || f.outer < 0 || f.outer > rank - f.dims ||
        (f.outer > 0 && f.outer + f.dims == rank) ||  // kept dims before and after the folded ones
        f.dims != p.folds[0].dims || f.outer != p.folds[0].outer)
      return "a fold";
    seen[static_cast<size_t>(f.output)] = true;
  }
  if (!p.folds.empty() && (p.kernel.reduced > 0 || p.product))
    return "folds beside a row reduction or a product";
  return {};
}

}  // namespace

std::string Program::check(size_t n_inputs) const {
  const Kernel& k = kernel;
  std::string why = k.problem();
  if (!why.empty()) return str_cat("its kernel's IR is malformed (", why, ")");
  const size_t n_in = num_kernel_inputs();
  if (n_in + (product ? 1 : 0) != n_inputs || k.inputs.size() != n_in)
    return str_cat("it reads ", n_in + (product ? 1 : 0), " inputs, not ", n_inputs);
  for (uint8_t b : pattern)
    if (b > 2 || (b == 2 && k.reduced > 0)) return "an input's inner-loop pattern";
  if (k.reduced > 0 && row_points < -1) return "the values per row";
  if (!views.empty() && views.size() != n_in) return "its views do not match its inputs";
  for (size_t i = 0; i < views.size(); ++i) {
    if (!viewed(i)) continue;
    if (why = view_problem(views[i]); !why.empty()) return str_cat("input ", i, "'s view: ", why);
    if (static_cast<int64_t>(views[i].dims.size()) > k.rank)
      return str_cat("input ", i, "'s view has rank over the kernel's");
  }
  if (product) {
    std::vector<int32_t> slots = product->also;
    slots.push_back(product->slot);
    std::sort(slots.begin(), slots.end());
    if (std::adjacent_find(slots.begin(), slots.end()) != slots.end())
      return "its product's inputs";
    for (int32_t k : slots) {
      if (k < 0 || static_cast<size_t>(k) >= n_in) return "its product's inputs";
      // A product read through a view reads columns of whole rows (the
      // product's rank is the kernel's; checked against its dims at run time).
      const auto i = static_cast<size_t>(k);
      if (viewed(i) &&
          !reads_columns(views[i], std::vector<int64_t>(views[i].dims.size(), int64_t{-1})))
        return "its product's view";
    }
  }
  if (why = check_outputs(*this); !why.empty()) return why;
  if (why = check_folds(*this); !why.empty()) return why;
  return work < 1 ? "its work per point" : "";
}

std::string Program::describe() const {
  return str_cat("the compiled program ", kernel.name, symbol.empty() ? "" : " (loaded)");
}

std::string ViewAttr::describe() const {
  return str_cat("a view of ", view.start.size(), " dims as ", view.dims.size());
}

std::string view_problem(const View& v) {
  constexpr int64_t kBig = int64_t{1} << 40;  // keeps offsets far from overflow
  const auto rs = static_cast<int64_t>(v.start.size());
  if (rs > kMaxRank || static_cast<int64_t>(v.dims.size()) > kMaxRank) return "over 16 dims";
  const bool none =
      std::any_of(v.dims.begin(), v.dims.end(), [](const ViewDim& d) { return d.size == 0; });
  for (int64_t s : v.start)  // (a reversed slice of an empty dim starts at -1)
    if ((s < 0 && !none) || s > kBig || s < -1) return "a start out of range";
  uint32_t seen = 0;
  for (const ViewDim& d : v.dims) {
    if (d.src < -1 || d.src >= rs || d.step == 0 || d.step < -kBig || d.step > kBig ||
        d.size < -2 - kBig || d.size > kBig)
      return "a dim out of range";
    if (d.src < 0) {
      if (d.size != 1) return "a new dim of size other than 1";
      continue;
    }
    if (seen >> d.src & 1) return "a source dim walked twice";
    seen |= uint32_t{1} << d.src;
    const int64_t start = v.start[static_cast<size_t>(d.src)];
    if (d.size == -1 && (d.step != 1 || start != 0)) return "a whole dim not read from 0 by 1";
    if (is_rest(d.size) && d.step != 1) return "the rest of a dim not read by 1";
  }
  return {};
}

std::string view_dims(const View& v, const Shape& src, int64_t* dims) {
  const auto src_rank = static_cast<int>(v.start.size());
  if (!src.rank_known() || src.rank() != src_rank)
    return str_cat("the source has shape ", src, " but its view reads ", src_rank, " dims");
  // The count of each value dim (-1: unknown), then every index read must
  // lie inside its dim (known dims only); a view of no values reads none.
  bool empty = false;
  for (size_t j = 0; j < v.dims.size(); ++j) {
    const ViewDim& vd = v.dims[j];
    const int64_t n = vd.src < 0 ? 1 : src.dim(static_cast<int>(vd.src));
    dims[j] = vd.src < 0     ? 1
              : vd.size >= 0 ? vd.size
              : n < 0        ? -1
                             : view_count(vd.size, v.start[static_cast<size_t>(vd.src)], n);
    empty |= dims[j] == 0;
  }
  for (int d = 0; d < src_rank && !empty; ++d) {
    const int64_t n = src.dim(d);
    // 128-bit: starts, steps and sizes (each up to 2^40) cannot overflow.
    __int128 first = v.start[static_cast<size_t>(d)], last = first;
    for (size_t j = 0; j < v.dims.size(); ++j)
      if (v.dims[j].src == d) {
        if (v.dims[j].size == -1 || dims[j] < 0)
          first = last = -1;  // all of it, or a count not yet known
        else
          last = first + static_cast<__int128>(dims[j] - 1) * v.dims[j].step;
      }
    if (n < 0 || first < 0) continue;
    if (first >= n || last < 0 || last >= n) {
      const __int128 bad = first >= n ? first : last;
      const bool huge = bad > std::numeric_limits<int64_t>::max();
      return str_cat("its view reads index ",
                     huge ? std::string("past 2^63") : str_cat(static_cast<int64_t>(bad)),
                     " of dim ", d, " of a source of shape ", src);
    }
  }
  return {};
}

int64_t view_strides(const View& v, const Shape& src, int64_t* strides) {
  int64_t contiguous[kMaxRank], acc = 1, offset = 0;
  bool none = false;
  for (size_t j = 0; j < v.dims.size(); ++j) none |= v.dims[j].size == 0;
  for (int d = static_cast<int>(v.start.size()); d-- > 0;) {
    contiguous[d] = acc;
    acc *= src.dim(d);
    offset += v.start[static_cast<size_t>(d)] * contiguous[d];
  }
  for (size_t j = 0; j < v.dims.size(); ++j) {  // a dim of one value or none has no stride
    const ViewDim& vd = v.dims[j];
    strides[j] = vd.src < 0 || vd.size == 0 || vd.size == 1 ? 0 : contiguous[vd.src] * vd.step;
  }
  return none ? 0 : offset;
}

}  // namespace kiln::jit
