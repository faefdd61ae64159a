// Element types. One table (kDTypeTable in dtype.cpp) holds names and sizes.
#pragma once
#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kiln/half.h"

namespace kiln {

/// Element type of a tensor. `kResource` is internal: a handle to a stateful
/// object such as a Variable. float16/bfloat16 (Half, BFloat16) are storage
/// types: ops marked kHalfInFloat compute them in float32 (src/ops/dispatch.cpp).
enum class DType : uint8_t {
  kInvalid = 0,
  kBool,
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
  kFloat32,
  kFloat64,
  kString,
  kResource,
  kFloat16,
  kBFloat16,
  kComplex64,
  kComplex128,
  kNumDTypes
};

/// TensorFlow's name for the dtype: "float32", "int32", "string", ...
std::string_view dtype_name(DType t);
/// Size in bytes of one element (sizeof(std::string) for strings).
size_t dtype_size(DType t);
/// Parse a name as returned by dtype_name; kInvalid when unknown.
DType dtype_from_name(std::string_view name);

/// float16 or bfloat16.
inline bool is_half(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16;
}
/// complex64 (two float32) or complex128 (two float64).
inline bool is_complex(DType t) {
  return t == DType::kComplex64 || t == DType::kComplex128;
}
inline bool is_floating(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || is_half(t);
}
inline bool is_integer(DType t) {
  return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt32 || t == DType::kInt64;
}
inline bool is_numeric(DType t) {
  return is_floating(t) || is_integer(t);
}
inline bool is_signed(DType t) {
  return t != DType::kUInt8 && is_numeric(t);
}
/// Elements that need construction/destruction (not plain bytes).
inline bool is_object(DType t) {
  return t == DType::kString || t == DType::kResource;
}

class Resource;  // defined in tensor.h

/// Compile-time mapping C++ type -> DType.
template <typename T>
struct dtype_of;
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::kBool;
};
template <>
struct dtype_of<int8_t> {
  static constexpr DType value = DType::kInt8;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::kUInt8;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::kFloat64;
};
template <>
struct dtype_of<Half> {
  static constexpr DType value = DType::kFloat16;
};
template <>
struct dtype_of<BFloat16> {
  static constexpr DType value = DType::kBFloat16;
};
template <>
struct dtype_of<std::complex<float>> {
  static constexpr DType value = DType::kComplex64;
};
template <>
struct dtype_of<std::complex<double>> {
  static constexpr DType value = DType::kComplex128;
};
template <>
struct dtype_of<std::string> {
  static constexpr DType value = DType::kString;
};
template <typename T>
inline constexpr DType dtype_v = dtype_of<T>::value;

}  // namespace kiln
