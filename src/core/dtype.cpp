#include "kiln/dtype.h"

#include <string>

namespace kiln {
namespace {
struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
};
// The one table of dtype names and sizes.
constexpr DTypeInfo kDTypeTable[] = {
    {DType::kInvalid, "invalid", 0},
    {DType::kBool, "bool", 1},
    {DType::kInt8, "int8", 1},
    {DType::kUInt8, "uint8", 1},
    {DType::kInt32, "int32", 4},
    {DType::kInt64, "int64", 8},
    {DType::kFloat32, "float32", 4},
    {DType::kFloat64, "float64", 8},
    {DType::kString, "string", sizeof(std::string)},
    {DType::kResource, "resource", sizeof(void*)},
    {DType::kFloat16, "float16", 2},
    {DType::kBFloat16, "bfloat16", 2},
    {DType::kComplex64, "complex64", 8},
    {DType::kComplex128, "complex128", 16},
};
static_assert(std::size(kDTypeTable) == static_cast<size_t>(DType::kNumDTypes),
              "kDTypeTable must list every DType");
}  // namespace

std::string_view dtype_name(DType t) {
  auto i = static_cast<size_t>(t);
  return i < std::size(kDTypeTable) ? kDTypeTable[i].name : "invalid";
}
size_t dtype_size(DType t) {
  auto i = static_cast<size_t>(t);
  return i < std::size(kDTypeTable) ? kDTypeTable[i].size : 0;
}
DType dtype_from_name(std::string_view name) {
  for (const auto& e : kDTypeTable)
    if (name == e.name && e.dtype != DType::kInvalid) return e.dtype;
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "half") return DType::kFloat16;
  return DType::kInvalid;
}

}  // namespace kiln
