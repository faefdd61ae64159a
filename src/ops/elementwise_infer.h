// Internal: dtype sets and inference helpers shared by the elementwise op
// families (unary, binary, select/cast/clip).
#pragma once
#include <cstdint>
#include <string>

#include "kiln/op.h"

namespace kiln {

/// A set of dtypes as a bit mask.
using DTypeSet = uint32_t;
constexpr DTypeSet dtype_bit(DType d) {
  return DTypeSet{1} << static_cast<int>(d);
}
constexpr DTypeSet kBoolSet = dtype_bit(DType::kBool);
constexpr DTypeSet kFloatSet = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64);
constexpr DTypeSet kSignedIntSet =
    dtype_bit(DType::kInt8) | dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64);
constexpr DTypeSet kIntSet = kSignedIntSet | dtype_bit(DType::kUInt8);
constexpr DTypeSet kRealSet = kIntSet | kFloatSet;
constexpr DTypeSet kSignedRealSet = kSignedIntSet | kFloatSet;
constexpr DTypeSet kStringSet = dtype_bit(DType::kString);
/// float16 and bfloat16: storage types (Cast converts them; kHalfInFloat
/// rows compute them in float32).
constexpr DTypeSet kHalfSet = dtype_bit(DType::kFloat16) | dtype_bit(DType::kBFloat16);
constexpr DTypeSet kComplexSet = dtype_bit(DType::kComplex64) | dtype_bit(DType::kComplex128);
constexpr DTypeSet kAllValueSet = kBoolSet | kRealSet | kStringSet | kHalfSet | kComplexSet;

inline bool in_set(DType d, DTypeSet s) {
  return (dtype_bit(d) & s) != 0;
}

/// "float32, float64" (for messages).
inline std::string dtype_set_names(DTypeSet s) {
  std::string out;
  for (int i = 1; i < static_cast<int>(DType::kNumDTypes); ++i) {
    const DType d = static_cast<DType>(i);
    if (!in_set(d, s)) continue;
    if (!out.empty()) out += ", ";
    out += dtype_name(d);
  }
  return out;
}

/// Fails unless input i's dtype is in `allowed`:
/// "Sqrt: x has dtype int32, expected one of float32, float64".
inline void expect_dtype_in(const InferContext& c, size_t i, DTypeSet allowed) {
  const DType d = c.dtype(i);
  if (in_set(d, allowed)) return;
  if (allowed == kBoolSet) c.fail(c.input_name(i), " has dtype ", dtype_name(d), ", expected bool");
  c.fail(c.input_name(i), " has dtype ", dtype_name(d), ", expected one of ",
         dtype_set_names(allowed));
}

}  // namespace kiln
