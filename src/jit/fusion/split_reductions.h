// jit_compile's reduction splitting: a reduction over dims that are not one
// run (a channels-first batch norm's N, H, W of NCHW) becomes a reduction of
// the last run of them, which the kernel computing its input takes in (a row
// kernel over H, W, or a fold of middle dims), and a reduction of that much
// smaller value over the rest. The full value then never reaches memory.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "kiln/graph.h"

namespace kiln::jit {

/// Splits each such reduction of a value a JIT lowering computes (Sum, Max,
/// Min, Prod; Mean of floats, whose mean of means over equal groups is the
/// mean) in `g`; returns the (part, rest) node names of each.
std::vector<std::pair<std::string, std::string>> split_reductions(Graph& g);

/// After clustering and folding: a part that no kernel took in joins its rest
/// again (one reduce call, as before the split).
void rejoin_parts(Graph& g, const std::vector<std::pair<std::string, std::string>>& splits);

}  // namespace kiln::jit
