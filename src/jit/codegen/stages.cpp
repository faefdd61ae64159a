#include "stages.h"

#include <algorithm>

namespace kiln::jit {

int instr_cost(std::span<const Instr> body, size_t i) {
  const Instr& in = body[i];
  // Complex values (GCC's __complex__ types) have no vector code.
  if (in.kind != Instr::kLoad && in.kind != Instr::kConst) {
    bool complex = is_complex(in.dtype);
    for (int32_t a : {in.a, in.b, in.c})
      complex |= a >= 0 && is_complex(body[static_cast<size_t>(a)].dtype);
    if (complex) return -1;
  }
  switch (in.kind) {
    case Instr::kLoad:
    case Instr::kConst: return 0;
    case Instr::kReduce:
    case Instr::kSelect: return 1;
    case Instr::kCast: {
      const DType from = body[static_cast<size_t>(in.a)].dtype;
      return is_half(from) || is_half(in.dtype) ? 6 : 1;
    }
    case Instr::kApply: {
      const JitCostFn cost = op_def(in.op).jit_cost;
      return cost ? cost(body[static_cast<size_t>(in.a)].dtype) : 1;
    }
  }
  return 1;
}

int64_t body_cost(std::span<const Instr> body) {
  int64_t n = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    const int c = instr_cost(body, i);
    n += c < 0 ? kScalarCost : c;
  }
  return n;
}

Stages plan_stages(const Kernel& k, const std::vector<uint8_t>& computed,
                   const std::vector<uint8_t>& last) {
  const size_t n = k.body.size();
  Stages s;
  s.of.assign(n, -1);
  s.carried.assign(n, 0);
  int spent = 0;  // the current stage's cost so far
  auto pinned = [&](size_t i) { return i < last.size() && last[i]; };
  for (size_t i = 0; i < n; ++i) {
    if (!computed[i] || pinned(i)) continue;
    const int c = instr_cost(k, i);
    const bool scalar = c < 0;
    const bool open = !s.scalar.empty();
    // A scalar instruction joins only a scalar stage; a vector one starts a
    // stage after a scalar one or past the budget.
    if (!open || scalar != (s.scalar.back() != 0) ||
        (!scalar && spent > 0 && spent + c > kStageBudget)) {
      s.scalar.push_back(scalar);
      spent = 0;
    }
    s.of[i] = s.count() - 1;
    spent += scalar ? 0 : c;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!pinned(i)) continue;
    if (s.scalar.empty()) s.scalar.push_back(0);
    s.of[i] = s.count() - 1;
  }
  if (s.count() <= 1) return s;
  int64_t bytes = 0;  // buffered bytes per point
  for (size_t i = 0; i < n; ++i) {
    const Instr& in = k.body[i];
    if (in.kind == Instr::kLoad) continue;
    for (int32_t a : {in.a, in.b, in.c}) {
      if (a < 0 || s.of[i] < 0) continue;
      const auto j = static_cast<size_t>(a);
      if (s.of[j] >= 0 && s.of[j] < s.of[i] && !s.carried[j]) {
        s.carried[j] = 1;
        bytes += static_cast<int64_t>(dtype_size(k.body[j].dtype));
      }
    }
  }
  s.block = kMaxBlock;
  while (s.block > kMinBlock && s.block * bytes > kStageBufferBytes) s.block /= 2;
  return s;
}

Stages one_stage(const Kernel& k, const std::vector<uint8_t>& computed) {
  Stages s;
  s.of.assign(k.body.size(), -1);
  s.carried.assign(k.body.size(), 0);
  for (size_t i = 0; i < k.body.size(); ++i) {
    if (!computed[i]) continue;
    if (s.scalar.empty()) s.scalar.push_back(0);
    s.of[i] = 0;
    s.scalar[0] |= instr_cost(k, i) < 0;
  }
  return s;
}

}  // namespace kiln::jit
