// Internal: flattening structured arguments into a trace key, tensor leaves
// and leaf descriptions (for retrace reasons and signature checks).
#pragma once
#include <string>
#include <vector>

#include "kiln/function.h"

namespace kiln::detail {

struct Leaf {
  std::string path;  ///< "x", "x[1]", "cfg['lr']"
  std::string desc;  ///< "float32[2]", "10", "'aa'"
  bool is_tensor = false;
  std::string kind;  ///< "Tensor", "int", "float", "str", "bool", "list", ...
};

struct Flat {
  std::vector<int64_t> key;        ///< exact key (tensor dtypes and dims)
  std::vector<int64_t> structure;  ///< key without tensor dims (for shape-only matches)
  std::vector<Tensor> tensors;     ///< tensor leaves, in walk order (calls)
  std::vector<ArgSpec> specs;      ///< spec of every tensor or spec leaf
  std::vector<Leaf> leaves;        ///< every leaf
};

/// Walks `args` (named by `names`, "args_i" when missing) depth-first.
Flat flatten_args(const std::vector<Value>& args, const std::vector<std::string>& names);

/// Only f.key and f.tensors, identical to flatten_args' (the cache-hit path).
void flatten_key(const std::vector<Value>& args, Flat& f);

/// Placeholder name for a leaf path: "x" stays, "x[1]" -> "x_1".
std::string placeholder_name(const std::string& path);

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

}  // namespace kiln::detail
