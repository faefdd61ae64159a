// Internal: kiln values <-> TensorFlow's protobuf messages (dtypes, shapes,
// tensors, structures). Readers validate everything and throw
// InvalidArgumentError with `where` (file and object) in the message.
#pragma once
#include <functional>
#include <string>

#include "core/crc32c.h"
#include "graph.pb.h"
#include "kiln/function.h"
#include "saved_model.pb.h"
#include "tensor.pb.h"

namespace kiln::saved_model::detail {

namespace pb = ::kiln::tfproto;

/// Rank and dimension bounds a file may declare.
inline constexpr int kMaxRank = 64;
inline constexpr int64_t kMaxDim = int64_t{1} << 48;

/// TensorFlow's DataType of a kiln dtype (InvalidArgumentError for kInvalid).
pb::DataType to_proto(DType t);
/// kiln's dtype of a file's DataType; throws naming `where` when kiln has none.
DType from_proto(int t, const std::string& where);

void to_proto(const Shape& s, pb::TensorShapeProto* out);
/// A validated shape (rank <= kMaxRank, dims -1 or in [0, kMaxDim]).
Shape from_proto(const pb::TensorShapeProto& s, const std::string& where);

/// A concrete tensor as TensorProto (strings in string_val, others as bytes).
void to_proto(const Tensor& t, pb::TensorProto* out);
/// The tensor a TensorProto holds; sizes, dtype and bool bytes validated.
Tensor from_proto(const pb::TensorProto& t, const std::string& where);

/// The object id of a variable bound as an argument (the exporter's node).
using VariableId = std::function<int(const Variable&)>;
/// The loaded variable of an object id (InvalidArgumentError when none).
using VariableOf = std::function<Variable(int64_t)>;

/// A structure (arguments or results) as StructuredValue: tensors and specs
/// become TensorSpecProto; a variable bound as an argument becomes
/// TensorFlow's VariableSpec whose alias is `ids(v)`.
void to_proto(const Value& v, pb::StructuredValue* out, const std::string& what,
              const VariableId& ids = {});
/// The structure back; TensorSpecProto leaves become ArgSpec values and
/// VariableSpecs the variables `vars` names. Nesting deeper than 32 levels
/// is refused.
Value from_proto(const pb::StructuredValue& v, const std::string& where,
                 const VariableOf& vars = {}, int depth = 0);

/// The bytes of a file; NotFoundError when missing, DataLossError when
/// unreadable, InvalidArgumentError when larger than `max_bytes`.
std::string read_file(const std::string& path, size_t max_bytes);
/// Writes `bytes` to `path` atomically (temporary file, then rename).
void write_file(const std::string& path, const std::string& bytes);

/// Parses a message from a file's bytes with protobuf's own log messages
/// silenced (a hostile file is reported by the caller's error, not logged);
/// false when the bytes are not a valid message.
bool parse(google::protobuf::MessageLite& m, const std::string& bytes);

/// CRC-32C (Castagnoli) of `n` bytes, as TensorFlow checksums its files.
using kiln::detail::crc32c;

}  // namespace kiln::saved_model::detail
