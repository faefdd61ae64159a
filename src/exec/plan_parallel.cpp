// Parallel regions of a Plan (see kiln/executor.h): which windows of steps
// split into independent heavy branches worth running on several threads.
//
// Cost model, in element-operations: a step costs what its row's cost rule
// says (OpDef::cost: MatMul and convolutions count their contraction length,
// FusedElementwise its instructions), else max(elements in, elements out). A step "parallelizes
// internally" when its kernel would split the work over the pool (or OpenBLAS/oneDNN threads)
// anyway. A window becomes a region when >= 2 of its groups cost
// >= 4 * parallel_grain each and the estimated time with the groups on
// separate threads (each kernel then single-threaded) beats running the
// window in order (internally parallel steps sped up by the thread count)
// by 20 %.
#include <algorithm>
#include <unordered_map>

#include "kiln/config.h"
#include "kiln/executor.h"
#include "kiln/thread_pool.h"

namespace kiln {
namespace {

// Plans longer than this are not analysed (the analysis is quadratic in the
// worst case); neither is more than kScanBudget * steps of window scanning.
constexpr size_t kMaxSteps = 8192;
constexpr size_t kScanBudget = 32;

using Cost = OpCost;

// The row's cost rule, or the default: one element-operation per element,
// internal above one grain.
Cost estimate(const OpDef& op, const Attrs& attrs, std::span<const int64_t> in,
              std::span<const int64_t> out, int64_t out_inner, int64_t grain) {
  const CostQuery q{op, attrs, in, out, out_inner, grain};
  if (op.cost) return op.cost(q);
  return {q.elements(), std::max(q.in_elements(), q.out_elements()) > grain};
}

struct UnionFind {
  std::vector<int32_t> parent;
  std::vector<double> cost;
  int32_t find(int32_t x) {
    while (parent[static_cast<size_t>(x)] != x) {
      const int32_t p = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
      parent[static_cast<size_t>(x)] = p;
      x = p;
    }
    return x;
  }
};

}  // namespace

std::vector<Plan::Region> Plan::analyse(const std::vector<StepInfo>& info) const {
  std::vector<Region> regions;
  const size_t n_steps = steps_.size();
  const int threads = ThreadPool::global().num_threads();
  if (threads < 2 || n_steps < 2 || n_steps > kMaxSteps) return regions;
  const int64_t grain = std::max<int64_t>(1, config().parallel_grain);
  const double heavy = 4.0 * static_cast<double>(grain);
  const double hoist_limit = heavy / 16;

  std::vector<Cost> cost(n_steps);
  std::vector<double> suffix(n_steps + 1, 0);
  for (size_t k = 0; k < n_steps; ++k)
    cost[k] = estimate(*steps_[k].op, steps_[k].attrs, info[k].in_elements, info[k].out_elements,
                       info[k].out_inner, grain);
  for (size_t k = n_steps; k-- > 0;) suffix[k] = suffix[k + 1] + cost[k].work;
  if (suffix[0] < 2 * heavy) return regions;  // small plans: nothing to find

  UnionFind uf;
  uf.parent.resize(n_steps);
  uf.cost.resize(n_steps);
  // Per step of the current window: 1 = pre (light, inputs from before the
  // window or from pre), 2 = post (stateful, or reads a post step).
  std::vector<uint8_t> phase(n_steps, 0);
  size_t budget = kScanBudget * n_steps;
  std::vector<int32_t> roots;

  size_t begin = 0;
  while (begin < n_steps && suffix[begin] >= 2 * heavy && budget > 0) {
    // Grow the window [begin, end) until a step would join two heavy groups.
    // Light steps whose in-window inputs all come from pre steps run first
    // ("pre"), so shared light producers (variable reads, casts) do not tie
    // groups together. Stateful steps never run on a chain: they run on the
    // calling thread in pre (when light and ready) or after the join
    // ("post", with everything reading them), in program order either way.
    std::vector<int32_t> members;
    size_t end = begin;
    for (; end < n_steps && budget > 0; ++end, --budget) {
      const int32_t j = static_cast<int32_t>(end);
      roots.clear();
      bool only_pre = true, after_post = false;
      for (int32_t p : info[end].preds) {
        if (p < static_cast<int32_t>(begin)) continue;
        const uint8_t ph = phase[static_cast<size_t>(p)];
        after_post |= ph == 2;
        if (ph == 0) {
          only_pre = false;
          roots.push_back(uf.find(p));
        }
      }
      if (after_post) {
        phase[end] = 2;
        continue;
      }
      if (only_pre && cost[end].work < hoist_limit) {
        phase[end] = 1;
        continue;
      }
      if (steps_[end].op->has(kStateful)) {
        phase[end] = 2;
        continue;
      }
      std::sort(roots.begin(), roots.end());
      roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
      int heavy_roots = 0;
      for (int32_t r : roots) heavy_roots += uf.cost[static_cast<size_t>(r)] >= heavy;
      if (heavy_roots >= 2) break;
      uf.parent[end] = j;
      uf.cost[end] = cost[end].work;
      for (int32_t r : roots) {
        uf.parent[static_cast<size_t>(r)] = j;
        uf.cost[end] += uf.cost[static_cast<size_t>(r)];
      }
      members.push_back(j);
    }

    // Groups of the window, each in program order; heavy ones first.
    std::unordered_map<int32_t, size_t> group_of;
    std::vector<std::vector<int32_t>> groups;
    std::vector<double> group_cost;
    for (int32_t m : members) {
      const int32_t r = uf.find(m);
      auto [it, fresh] = group_of.emplace(r, groups.size());
      if (fresh) {
        groups.emplace_back();
        group_cost.push_back(uf.cost[static_cast<size_t>(r)]);
      }
      groups[it->second].push_back(m);
    }
    int n_heavy = 0;
    for (double c : group_cost) n_heavy += c >= heavy;
    bool found = false;
    if (n_heavy >= 2) {
      // Longest-processing-time first onto min(threads, groups) chains.
      std::vector<size_t> order(groups.size());
      for (size_t g = 0; g < order.size(); ++g) order[g] = g;
      std::sort(order.begin(), order.end(),
                [&](size_t a, size_t b) { return group_cost[a] > group_cost[b]; });
      const size_t n_chains = std::min(static_cast<size_t>(threads), groups.size());
      std::vector<double> load(n_chains, 0);
      std::vector<std::vector<int32_t>> chains(n_chains);
      for (size_t g : order) {
        const size_t c =
            static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        load[c] += group_cost[g];
        chains[c].insert(chains[c].end(), groups[g].begin(), groups[g].end());
      }
      double seq = 0;
      for (int32_t m : members) {
        const Cost& c = cost[static_cast<size_t>(m)];
        seq += c.internal ? c.work / threads : c.work;
      }
      const double par = *std::max_element(load.begin(), load.end());
      if (par <= 0.8 * seq) {
        found = true;
        Region r;
        r.begin = static_cast<int32_t>(begin);
        r.end = static_cast<int32_t>(end);
        for (size_t k = begin; k < end; ++k) {
          if (phase[k] == 1) r.pre.push_back(static_cast<int32_t>(k));
          if (phase[k] == 2) r.post.push_back(static_cast<int32_t>(k));
        }
        for (auto& c : chains) {
          std::sort(c.begin(), c.end());
          r.chains.push_back(std::move(c));
        }
        // A value read by more than one unit (pre, a chain, post) must not
        // be moved out by one of them: it is freed at the region's end.
        std::vector<int> unit(end - begin, 0);
        for (int32_t k : r.post) unit[static_cast<size_t>(k) - begin] = -2;
        for (size_t c = 0; c < r.chains.size(); ++c)
          for (int32_t k : r.chains[c])
            unit[static_cast<size_t>(k) - begin] = static_cast<int>(c) + 1;
        std::unordered_map<int32_t, int> reader;  // slot -> unit, -1 = several
        for (size_t k = begin; k < end; ++k)
          for (int32_t slot : steps_[k].in_slots) {
            if (slot < 0) continue;
            auto [it, fresh] = reader.emplace(slot, unit[k - begin]);
            if (!fresh && it->second != unit[k - begin]) it->second = -1;
          }
        for (size_t k = begin; k < end; ++k) {
          std::vector<uint8_t> moves = steps_[k].in_last_use;
          for (size_t i = 0; i < moves.size(); ++i) {
            const int32_t slot = steps_[k].in_slots[i];
            if (moves[i] == 2) moves[i] = 0;  // a caller's input: never moved in a region
            if (!moves[i] || reader.at(slot) != -1) continue;
            moves[i] = 0;
            r.release.push_back(slot);
          }
          r.moves.push_back(std::move(moves));
        }
        regions.push_back(std::move(r));
      }
    }
    std::fill(phase.begin() + static_cast<std::ptrdiff_t>(begin),
              phase.begin() + static_cast<std::ptrdiff_t>(end), 0);
    begin = found ? end : begin + 1;
  }
  return regions;
}

}  // namespace kiln
