// The kernel passes: CSE and dead-code removal over a lowered kernel (the
// "optimized_hlo" stage), and optionally excess precision (round trips through
// a half type dropped, as XLA's xla_allow_excess_precision does).
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/env.h"
#include "jit/fusion/cluster.h"
#include "kiln/config.h"

namespace kiln::jit {

namespace {
// With cse[] numbering: `in` widens a value that was rounded to a half type from
// `in`'s own dtype (f32 -> bf16 -> f32); returns that value, else -1.
int32_t half_round_trip(const Instr& in, const std::vector<Instr>& cse) {
  if (in.kind != Instr::kCast || in.a < 0) return -1;
  const Instr& half = cse[static_cast<size_t>(in.a)];
  if (half.kind != Instr::kCast || !is_half(half.dtype) || half.a < 0) return -1;
  return cse[static_cast<size_t>(half.a)].dtype == in.dtype ? half.a : -1;
}
}  // namespace

Kernel optimize_kernel(const Kernel& k, bool excess_precision) {
  // CSE: identical instructions over identical (renumbered) arguments.
  std::vector<int32_t> map(k.body.size());
  std::vector<Instr> cse;
  std::vector<std::string> origin;
  std::map<std::tuple<int, int, int, int32_t, int32_t, int32_t, uint64_t>, int32_t> seen;
  for (size_t i = 0; i < k.body.size(); ++i) {
    Instr in = k.body[i];
    if (in.kind != Instr::kLoad)
      for (int32_t* a : {&in.a, &in.b, &in.c})
        if (*a >= 0) *a = map[static_cast<size_t>(*a)];
    if (excess_precision) {
      if (const int32_t v = half_round_trip(in, cse); v >= 0) {
        map[i] = v;
        continue;
      }
    }
    const auto key =
        std::make_tuple(int(in.kind), int(in.dtype), int(in.op), in.a, in.b, in.c, in.bits);
    auto [it, fresh] = seen.emplace(key, static_cast<int32_t>(cse.size()));
    if (fresh) {
      cse.push_back(in);
      origin.push_back(i < k.origin.size() ? k.origin[i] : std::string());
    }
    map[i] = it->second;
  }
  // DCE: keep what the outputs need (and every load, in input order).
  std::vector<bool> live(cse.size());
  for (int32_t o : k.outputs) live[static_cast<size_t>(map[static_cast<size_t>(o)])] = true;
  for (size_t i = cse.size(); i-- > 0;) {
    if (cse[i].kind == Instr::kLoad) live[i] = true;
    if (!live[i] || cse[i].kind == Instr::kLoad) continue;
    for (int32_t a : {cse[i].a, cse[i].b, cse[i].c})
      if (a >= 0) live[static_cast<size_t>(a)] = true;
  }
  Kernel r = k;
  r.body.clear();
  r.origin.clear();
  std::vector<int32_t> renum(cse.size(), -1);
  for (size_t i = 0; i < cse.size(); ++i) {
    if (!live[i]) continue;
    Instr in = cse[i];
    if (in.kind != Instr::kLoad)
      for (int32_t* a : {&in.a, &in.b, &in.c})
        if (*a >= 0) *a = renum[static_cast<size_t>(*a)];
    renum[i] = static_cast<int32_t>(r.body.size());
    r.body.push_back(in);
    r.origin.push_back(origin[i]);
  }
  for (int32_t& o : r.outputs) o = renum[static_cast<size_t>(map[static_cast<size_t>(o)])];
  return r;
}

}  // namespace kiln::jit
