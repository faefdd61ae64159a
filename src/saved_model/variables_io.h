// Internal: the values of an export's variables, as TensorFlow keeps them: a
// checkpoint (tensor bundle, include/kiln/checkpoint.h) at variables/variables,
// keyed by each variable's path in the object graph, with the object graph
// itself under _CHECKPOINTABLE_OBJECT_GRAPH. Exports of earlier kilns
// (variables/kiln_variables.index, a VariablesIndex protobuf, and
// variables/kiln_variables.data) are still read. Values start at 64-byte
// offsets and the loader maps the data file (copy-on-write).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "kiln/tensor.h"
#include "saved_model/proto_io.h"

namespace kiln::saved_model::detail {

inline constexpr const char* kVariablesIndex = "variables/kiln_variables.index";
inline constexpr const char* kVariablesData = "variables/kiln_variables.data";
inline constexpr const char* kVariablesPrefix = "variables/variables";

/// Each object's (edge name, child id) pairs; object 0 is the root.
using Edges = std::vector<std::vector<std::pair<std::string, int>>>;

/// Writes (node id, value) pairs into `dir`'s variables/ folder; `edges` is
/// the object graph (a value's key is its node's path from the root).
void write_variables(const std::string& dir, const Edges& edges,
                     const std::vector<std::pair<int, Tensor>>& values);

/// Reads and validates them: (node id, value) pairs for the nodes whose values
/// the files hold. In TensorFlow's layout, the checkpoint's object graph is
/// matched to `edges` by edge names from the root. Offsets, sizes, dtypes,
/// shapes and CRC-32C checksums are checked; a value's tensor shares the mapped
/// file when aligned.
std::vector<std::pair<int, Tensor>> read_variables(const std::string& dir, const Edges& edges);

}  // namespace kiln::saved_model::detail
