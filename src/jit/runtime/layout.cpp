#include "layout.h"

namespace kiln::jit {

int64_t Layout::rows() const {
  int64_t r = 1;
  for (int d = 0; d + 1 < rank; ++d) r *= shape[d];
  return r;
}

std::vector<uint8_t> Layout::inner_pattern() const {
  std::vector<uint8_t> p;
  for (size_t k = 0; k * static_cast<size_t>(rank) < strides.size(); ++k)
    p.push_back(inner(k) == 0 ? 0 : inner(k) == 1 ? 1 : 2);
  return p;
}

void collapse(std::span<const int64_t> dims, size_t n_in, const int64_t* in_dims, Layout& l,
              bool keep_last, const int64_t* in_strides, int split_at) {
  const size_t rank = dims.size();
  // Full strides per input over the iteration dims (0 where broadcast).
  int64_t full[kMaxDims];
  int64_t kept[kMaxDims];  // the dims that stay (size > 1), in order
  size_t n_kept = 0;
  for (size_t d = 0; d < rank; ++d)
    if (dims[d] != 1 || (keep_last && d + 1 == rank)) kept[n_kept++] = static_cast<int64_t>(d);
  // First pass: which kept dims merge with the previous one (for all inputs).
  bool merge[kMaxDims] = {};
  for (size_t j = 1; j < n_kept; ++j)
    merge[j] = split_at <= 0 || kept[j - 1] >= split_at || kept[j] < split_at;
  l.strides.clear();
  l.strides.resize(n_in * kMaxDims);  // zeros
  for (size_t k = 0; k < n_in; ++k) {
    const int64_t* in = in_dims + k * rank;
    int64_t stride = 1;
    for (size_t d = rank; d-- > 0;) {
      full[d] = in[d] == 1 ? 0 : in_strides ? in_strides[k * rank + d] : stride;
      stride *= in[d];
    }
    for (size_t j = 1; j < n_kept; ++j) {
      const auto prev = static_cast<size_t>(kept[j - 1]), cur = static_cast<size_t>(kept[j]);
      merge[j] = merge[j] && full[prev] == full[cur] * dims[cur];
    }
    if (keep_last && n_kept > 0) merge[n_kept - 1] = false;
    // Keep each input's full strides of kept dims for now (row k).
    for (size_t j = 0; j < n_kept; ++j) l.strides[k * kMaxDims + j] = full[kept[j]];
  }
  // Second pass: merge, then pack the strides to [k * rank + d].
  int r = 0;
  int64_t group_last[kMaxDims];  // the kept index whose stride each group keeps
  for (size_t j = 0; j < n_kept; ++j) {
    if (j > 0 && merge[j]) {
      l.shape[r - 1] *= dims[static_cast<size_t>(kept[j])];
      group_last[r - 1] = static_cast<int64_t>(j);
    } else {
      l.shape[r] = dims[static_cast<size_t>(kept[j])];
      group_last[r] = static_cast<int64_t>(j);
      ++r;
    }
  }
  if (r == 0) {
    l.rank = 1;
    l.shape[0] = 1;
    l.strides.clear();
    l.strides.resize(n_in);  // zeros
    return;
  }
  for (size_t k = 0; k < n_in; ++k)
    for (int g = 0; g < r; ++g)
      l.strides[k * static_cast<size_t>(r) + static_cast<size_t>(g)] =
          l.strides[k * kMaxDims + static_cast<size_t>(group_last[g])];
  l.strides.resize(n_in * static_cast<size_t>(r));
  l.rank = r;
}

bool collapse_rows(std::span<const int64_t> dims, int reduced, size_t n_in, const int64_t* in_dims,
                   int64_t* scratch, Layout& l, const int64_t* in_strides) {
  const size_t rank = dims.size(), outer = rank - static_cast<size_t>(reduced);
  const size_t r = outer + 1;
  // Row dims as they are, then the product of the reduced ones.
  auto fold = [&](const int64_t* src, int64_t* dst) {
    dst[outer] = 1;
    for (size_t j = 0; j < rank; ++j) {
      if (j < outer)
        dst[j] = src[j];
      else
        dst[outer] *= src[j];
    }
  };
  int64_t d[kMaxDims + 1];
  fold(dims.data(), d);
  int64_t* folded_dims = scratch;
  int64_t* folded_strides = scratch + n_in * r;
  for (size_t k = 0; k < n_in; ++k) {
    const int64_t* in = in_dims + k * rank;
    fold(in, folded_dims + k * r);
    if (!in_strides) continue;
    // The reduced dims read as one run: each stride the next one's times its size.
    const int64_t* st = in_strides + k * rank;
    int64_t* fs = folded_strides + k * r;
    std::copy(st, st + outer, fs);
    int64_t run = -1;  // the stride the next outer reduced dim must have
    fs[outer] = 0;
    for (size_t j = rank; j-- > outer;) {
      if (in[j] == 1) continue;
      if (run < 0)
        fs[outer] = st[j];
      else if (st[j] != run)
        return false;
      run = st[j] * in[j];
    }
  }
  collapse(std::span<const int64_t>(d, r), n_in, folded_dims, l, true,
           in_strides ? folded_strides : nullptr);
  return true;
}

Layout collapse(std::span<const int64_t> dims, std::span<const std::vector<int64_t>> inputs,
                int reduced, std::span<const std::vector<int64_t>> strides) {
  const size_t rank = dims.size();
  std::vector<int64_t> in(inputs.size() * rank, 1), st;
  bool viewed = false;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const auto& d = inputs[k];
    const size_t off = rank - d.size();
    for (size_t j = 0; j < d.size(); ++j) in[k * rank + off + j] = d[j];
    viewed |= k < strides.size() && !strides[k].empty();
  }
  if (viewed) {  // every input's strides: its view's, or contiguous
    st.assign(inputs.size() * rank, 0);
    for (size_t k = 0; k < inputs.size(); ++k) {
      int64_t* s = st.data() + k * rank;
      if (k < strides.size() && strides[k].size() == rank)
        std::copy(strides[k].begin(), strides[k].end(), s);
      else
        contiguous_strides(in.data() + k * rank, rank, s);
    }
  }
  const int64_t* in_strides = viewed ? st.data() : nullptr;
  Layout l;
  if (reduced > 0) {
    std::vector<int64_t> scratch(2 * inputs.size() * (kMaxDims + 1));
    if (!collapse_rows(dims, reduced, inputs.size(), in.data(), scratch.data(), l, in_strides))
      collapse_rows(dims, reduced, inputs.size(), in.data(), scratch.data(), l);
  } else {
    collapse(dims, inputs.size(), in.data(), l, false, in_strides);
  }
  return l;
}

}  // namespace kiln::jit
