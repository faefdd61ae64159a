// Internal: helpers shared by the gradient rules in the op family files.
// Everything is built from kiln ops, so rules work eagerly and traced.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kiln/op.h"

// The parameters of a gradient rule (GradFn), named as the rules use them:
// in/out are the op's inputs/outputs, g the output gradients, gi the input
// gradients to fill.
#define KILN_GRAD_ARGS                                                                           \
  [[maybe_unused]] const ::kiln::OpDef &op, [[maybe_unused]] std::span<const ::kiln::Tensor> in, \
      [[maybe_unused]] std::span<const ::kiln::Tensor> out,                                      \
      [[maybe_unused]] std::span<const ::kiln::Tensor> g,                                        \
      [[maybe_unused]] const ::kiln::Attrs &attrs, [[maybe_unused]] std::vector<::kiln::Tensor>&gi

namespace kiln::grad {

/// `g` (the gradient of a broadcast result) summed over the dimensions that
/// broadcasting added or stretched, and reshaped to `x`'s shape. A dimension
/// of x that is unknown while tracing is taken as not broadcast.
Tensor unbroadcast(const Tensor& g, const Tensor& x);

/// x's shape as an int64 vector: a constant when static, else a Shape op.
Tensor shape_of(const Tensor& x);

/// Non-negative axes of a reduction over `rank` dims (empty = all axes).
std::vector<int64_t> reduction_axes(const std::vector<int64_t>& axes, int64_t rank);

/// `g` (a reduction's gradient, reduced axes removed unless keepdims)
/// reshaped with size-1 reduced axes, then broadcast to x's shape.
Tensor expand_reduced(const Tensor& g, const Tensor& x, const std::vector<int64_t>& axes);

/// A known int vector value of an input (eager, or a constant while
/// tracing); throws Unimplemented naming `op` otherwise.
std::vector<int64_t> known_ints(const OpDef& op, const Tensor& t, const char* what);

}  // namespace kiln::grad
