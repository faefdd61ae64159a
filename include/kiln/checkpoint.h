// Checkpoints in TensorFlow's tensor-bundle format, readable and writable
// without Python: `prefix.index` (a sorted table of BundleEntryProto) and
// `prefix.data-NNNNN-of-MMMMM` shards holding the tensors' bytes. TensorFlow's
// tf.train.Checkpoint / tf.train.load_checkpoint read what BundleWriter writes,
// and BundleReader reads what they write (docs/CHECKPOINTS.md).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::checkpoint {

/// The key of the serialized TrackableObjectGraph in a TF 2 checkpoint.
inline constexpr const char* kObjectGraphKey = "_CHECKPOINTABLE_OBJECT_GRAPH";
/// The attribute name of a variable's value in the object graph.
inline constexpr const char* kVariableValue = "VARIABLE_VALUE";

/// `prefix.index`.
std::string index_path(const std::string& prefix);
/// `prefix.data-0000<shard>-of-0000<num_shards>`.
std::string data_path(const std::string& prefix, int shard, int num_shards);

/// What the index says of one tensor. `dtype` is TensorFlow's DataType number
/// (so tensors of dtypes kiln lacks, such as int16, are still listed).
struct Entry {
  int dtype = 0;
  std::vector<int64_t> shape;
  int shard = 0;
  int64_t offset = 0;
  int64_t size = 0;
  uint32_t crc32c = 0;       ///< unmasked CRC-32C of the stored bytes
  bool partitioned = false;  ///< a tensor saved in slices (read joins them)
};

/// TensorFlow's dtype name of a DataType number ("float32", "int16", ...);
/// empty for one a bundle cannot hold as plain bytes or strings.
std::string_view dtype_name(int tf_dtype);
/// The DataType number of a dtype_name() ("float32" -> 1); 0 when unknown.
int tf_dtype(std::string_view name);
/// Bytes per element of a plain DataType (0 for strings and unknown ones).
size_t dtype_size(int tf_dtype);

/// Writes one bundle: add() tensors under distinct keys, then finish(). Values
/// go to `prefix.data-00000-of-00001`, 64-byte aligned so a reader can map
/// them; both files are written to temporary names and renamed at finish(),
/// the data first, so a crash leaves the old checkpoint or the new one.
class BundleWriter {
 public:
  explicit BundleWriter(std::string prefix);
  ~BundleWriter();  ///< removes the temporary files when finish() was not reached
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;

  /// A tensor of any kiln dtype but resource. InvalidArgumentError for an
  /// empty or repeated key.
  void add(const std::string& key, const Tensor& value);
  /// Plain bytes of TensorFlow dtype `tf_dtype` (for dtypes kiln lacks).
  void add_bytes(const std::string& key, int tf_dtype, const std::vector<int64_t>& shape,
                 std::string_view bytes);
  /// A string tensor given as its elements.
  void add_strings(const std::string& key, const std::vector<int64_t>& shape,
                   const std::vector<std::string>& values);
  /// Writes the index and renames both files into place.
  void finish();
  /// Drops what was added and removes the temporary file (after an error).
  void abandon();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// A validated bundle. Opening reads and checks the whole index (its table's
/// blocks, checksums, the header, every entry's dtype, shape and extent against
/// its shard's size); tensors are read on demand, checksummed, and share the
/// mapped shard (copy-on-write) when their offset is 64-byte aligned. Errors:
/// NotFoundError (missing files or keys), DataLossError (damaged files),
/// UnimplementedError (big-endian bundles, partitioned string tensors,
/// variants). A tensor TensorFlow saved in slices (partitioned variables) is
/// read whole: its slices (their keys are not listed) are checked when
/// opening to cover it exactly once, and joined on first read.
class BundleReader {
 public:
  explicit BundleReader(const std::string& prefix);
  ~BundleReader();
  BundleReader(const BundleReader&) = delete;
  BundleReader& operator=(const BundleReader&) = delete;

  const std::string& prefix() const;
  /// Every key but the header's, sorted.
  std::vector<std::string> keys() const;
  bool contains(const std::string& key) const;
  const Entry& entry(const std::string& key) const;
  /// The tensor under `key`, as a kiln Tensor (UnimplementedError for a dtype
  /// kiln lacks: use bytes()).
  Tensor read(const std::string& key) const;
  /// A plain tensor's stored bytes, checked (valid while the reader lives).
  std::string_view bytes(const std::string& key) const;
  /// A string tensor's elements, checked.
  std::vector<std::string> strings(const std::string& key) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// True when `prefix.index` is a table file (TensorFlow's format), judged by
/// its footer's magic number; false when missing or anything else.
bool is_bundle(const std::string& prefix);

/// TF 2's object graph (TrackableObjectGraph): node 0 is the root.
struct ObjectGraph {
  struct Attribute {
    std::string name;  ///< kVariableValue for a variable's value
    std::string full_name;
    std::string checkpoint_key;  ///< the bundle key of the value
  };
  struct Slot {
    int original_node = 0;  ///< the variable the slot belongs to
    std::string slot_name;  ///< "m", "v", "momentum", ...
    int slot_node = 0;      ///< the node holding the slot variable
  };
  struct Node {
    std::vector<std::pair<std::string, int>> children;  ///< (edge name, node id)
    std::vector<Attribute> attributes;
    std::vector<Slot> slots;  ///< on an optimizer's node
  };
  std::vector<Node> nodes;
};

/// The serialized TrackableObjectGraph.
std::string encode_object_graph(const ObjectGraph& graph);
/// Parses and validates one (node ids in range, at least the root);
/// DataLossError naming `where` otherwise.
ObjectGraph decode_object_graph(std::string_view bytes, const std::string& where);

}  // namespace kiln::checkpoint
