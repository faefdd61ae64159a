// Internal: flattening structured arguments into a trace key, tensor leaves
// and leaf descriptions (for retrace reasons and signature checks).
#pragma once
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "kiln/function.h"
#include "kiln/small_vector.h"

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

/// The hot path's key: inline up to 32 values (no heap for common calls).
using KeyBuf = SmallVec<int64_t, 32>;

/// Tensor leaves of a call, inline up to 8 (contiguous, for call_flat).
class LeafTensors {
 public:
  static constexpr size_t kInline = 8;
  void push_back(const Tensor& t) {
    if (n_ < kInline) {
      inline_[n_++] = t;
      return;
    }
    if (n_ == kInline) {
      heap_.reserve(2 * kInline);
      for (Tensor& x : inline_) heap_.push_back(std::move(x));
    }
    heap_.push_back(t);
    ++n_;
  }
  size_t size() const { return n_; }
  std::span<const Tensor> span() const {
    return n_ <= kInline ? std::span<const Tensor>(inline_, n_)
                         : std::span<const Tensor>(heap_.data(), n_);
  }

 private:
  Tensor inline_[kInline];
  std::vector<Tensor> heap_;
  size_t n_ = 0;
};

/// The key and tensor leaves only, identical to flatten_args' (the cache-hit
/// path: no strings built). A resource tensor gives a key no trace has.
void flatten_key(const std::vector<Value>& args, KeyBuf& key, LeafTensors& tensors);
/// The key of a call whose arguments are all tensors (its tensor leaves are
/// the arguments, unless one is a resource: then the key has a -1).
void flatten_key(std::span<const Tensor> args, KeyBuf& key);

/// Placeholder name for a leaf path: "x" stays, "x[1]" -> "x_1".
std::string placeholder_name(const std::string& path);

/// Hash and equality of keys, transparent so a span looks up a vector key.
struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::span<const int64_t> k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
  size_t operator()(const std::vector<int64_t>& k) const {
    return (*this)(std::span<const int64_t>(k));
  }
};
struct KeyEq {
  using is_transparent = void;
  static bool eq(std::span<const int64_t> a, std::span<const int64_t> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 8) == 0;
  }
  bool operator()(const std::vector<int64_t>& a, const std::vector<int64_t>& b) const {
    return a == b;
  }
  bool operator()(std::span<const int64_t> a, const std::vector<int64_t>& b) const {
    return eq(a, b);
  }
  bool operator()(const std::vector<int64_t>& a, std::span<const int64_t> b) const {
    return eq(a, b);
  }
};

/// Whether v holds a variable (at any depth).
bool has_variable(const Value& v);
/// With an input_signature: `args` with each variable read (a recorded read,
/// so a tape sees it), as TensorFlow converts arguments bound to TensorSpecs
/// to tensors. `args` itself when none holds a variable.
std::vector<Value> read_signature_variables(const std::vector<Value>& args);

}  // namespace kiln::detail
