// Internal: helpers shared by the shape/data-movement op files
// (shape_ops.cpp, concat_split.cpp, slicing.cpp, tile_pad.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/op.h"

namespace kiln::shape_ops {

// Sub-definers called by define_shape_ops.
void define_concat_split_ops(OpTableBuilder& t);
void define_slicing_ops(OpTableBuilder& t);
void define_tile_pad_ops(OpTableBuilder& t);

/// Fails unless input i can be moved around (any dtype but resource).
void expect_data_dtype(const InferContext& c, size_t i);
/// Checks input i is an int32/int64 vector (a shape-like argument); returns
/// its length, or -1 when unknown.
int64_t int_vector_length(const InferContext& c, size_t i);
/// Checks input i is an int32/int64 scalar.
void expect_int_scalar(const InferContext& c, size_t i);
/// "[1,-1,3]" for messages.
std::string ints_str(const std::vector<int64_t>& v);
/// Fails when a fully known output shape has more than int64 elements.
void check_element_count(const InferContext& c, const Shape& s, const char* what = "output");
/// a * b, failing with `what` on int64 overflow (both >= 0).
int64_t checked_mul(const InferContext& c, int64_t a, int64_t b, const char* what);
/// a + b, failing with `what` on int64 overflow (both >= 0).
int64_t checked_add(const InferContext& c, int64_t a, int64_t b, const char* what);

/// A scalar tensor of `dtype` holding `s`; the numbers 0 and 1 also convert
/// to false/true for bool, and 0 to "" for string (default fill values).
Tensor scalar_of(Scalar s, DType dtype);

}  // namespace kiln::shape_ops
