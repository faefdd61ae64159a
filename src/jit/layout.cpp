#include "layout.h"

namespace kiln::jit {

int64_t Layout::rows() const {
  int64_t r = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) r *= shape[d];
  return r;
}

std::vector<uint8_t> Layout::inner_pattern() const {
  std::vector<uint8_t> p;
  for (const auto& s : strides) p.push_back(s.back() != 0);
  return p;
}

Layout collapse(std::span<const int64_t> dims, std::span<const std::vector<int64_t>> inputs) {
  const size_t rank = dims.size();
  // Full strides per input over the iteration dims (0 where broadcast).
  std::vector<std::vector<int64_t>> full(inputs.size(), std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < inputs.size(); ++k) {
    const auto& in = inputs[k];
    const size_t off = rank - in.size();
    int64_t stride = 1;
    for (size_t j = in.size(); j-- > 0;) {
      full[k][off + j] = in[j] == 1 ? 0 : stride;
      stride *= in[j];
    }
  }
  Layout l;
  l.strides.assign(inputs.size(), {});
  for (size_t d = 0; d < rank; ++d) {
    if (dims[d] == 1) continue;  // size-1 dims add nothing
    bool merge = !l.shape.empty();
    for (size_t k = 0; k < inputs.size() && merge; ++k) {
      const int64_t outer = l.strides[k].back(), inner = full[k][d];
      merge = outer == inner * dims[d];  // both broadcast (0 == 0) or contiguous
    }
    if (merge) {
      l.shape.back() *= dims[d];
      for (size_t k = 0; k < inputs.size(); ++k) l.strides[k].back() = full[k][d];
    } else {
      l.shape.push_back(dims[d]);
      for (size_t k = 0; k < inputs.size(); ++k) l.strides[k].push_back(full[k][d]);
    }
  }
  if (l.shape.empty()) {
    l.shape.push_back(1);
    for (auto& s : l.strides) s.push_back(0);
  }
  return l;
}

}  // namespace kiln::jit
