// The kernel passes: CSE and dead-code removal over a lowered kernel (the
// "optimized_hlo" stage).
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "jit/fusion/cluster.h"

namespace kiln::jit {

Kernel optimize_kernel(const Kernel& k) {
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
