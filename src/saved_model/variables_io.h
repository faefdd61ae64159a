// Internal: the values of an export's variables. variables/kiln_variables.index
// (a VariablesIndex protobuf) says where each lies in variables/kiln_variables.data;
// values start at 64-byte offsets, and the loader maps the data file
// (copy-on-write) instead of reading it.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "kiln/tensor.h"
#include "saved_model/proto_io.h"

namespace kiln::saved_model::detail {

inline constexpr const char* kVariablesIndex = "variables/kiln_variables.index";
inline constexpr const char* kVariablesData = "variables/kiln_variables.data";

/// Writes (node id, value) pairs into `dir`'s variables/ folder.
void write_variables(const std::string& dir, const std::vector<std::pair<int, Tensor>>& values);

/// Reads and validates them: (node id, value) pairs, one per entry. Offsets,
/// sizes, dtypes, shapes and CRC-32C checksums are checked; a value's tensor
/// shares the mapped file.
std::vector<std::pair<int, Tensor>> read_variables(const std::string& dir);

}  // namespace kiln::saved_model::detail
