// Internal: tensors TensorFlow saved in slices (partitioned variables; its
// sharding policies): the full tensor's entry lists its slices, each stored
// under a key of its own (OrderedCode: 0, the name, the rank, each
// dimension's start and length), which the reader finds, checks and joins.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tensor_bundle.pb.h"

namespace kiln::checkpoint::slices {

/// One slice of a tensor: per dimension its start and length (a full
/// dimension is start 0, length -1 in the key, its size here).
struct Slice {
  std::string key;  ///< where its bytes are stored
  std::vector<int64_t> start, length;
  int64_t elements() const;
};

/// The slice key TensorFlow stores a slice of `name` under.
std::string slice_key(std::string_view name, const std::vector<int64_t>& start,
                      const std::vector<int64_t>& length, const std::vector<bool>& full);

/// The slices of the tensor `name` of shape `shape` an entry lists, checked
/// to lie inside it and to cover it exactly once (DataLossError naming `at`).
std::vector<Slice> read_slices(
    const std::string& name, const std::vector<int64_t>& shape,
    const google::protobuf::RepeatedPtrField<tfproto::TensorSliceProto>& s, const std::string& at);

/// The full tensor's bytes (row-major, `item` bytes per element) from its
/// slices' bytes (`bytes_of(slice)`, each row-major over the slice).
std::string join_slices(const std::vector<int64_t>& shape, size_t item,
                        const std::vector<Slice>& slices,
                        const std::function<std::string_view(const Slice&)>& bytes_of);

}  // namespace kiln::checkpoint::slices
