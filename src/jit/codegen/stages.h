// Stages: how a kernel's loop over points splits into several loops over a
// block of points, so that every loop vectorizes and stays short.
//
// One loop computing a long chain of transcendentals per point is bound by
// the chain's latency: each iteration is hundreds of dependent vector
// instructions, more than the out-of-order window holds, so iterations no
// longer overlap (25 x tanh over [1000, 100] ran at 28 ns a point as one loop,
// 11 ns as 25 loops over blocks of 256 points; docs/JIT.md, "Stages"). And
// one instruction without vector code (a libm call, integer division) would
// leave the whole loop scalar. So the instructions of a loop are cut, in
// order, into stages of at most kStageBudget cost (fn::cost_of, through
// OpDef::jit_cost), an instruction without vector code alone in a stage of
// its own; a value one stage computes and a later one reads is kept in a
// buffer of one block (in L1).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "jit/ir/jit_ir.h"

namespace kiln::jit {

/// The most a vectorized stage costs (fn::cost_of units, about vector
/// instructions per vector of points) before the next instruction starts
/// another stage: one tanh with the arithmetic around it.
inline constexpr int kStageBudget = 48;
/// Bytes of block buffers per kernel loop: the block shrinks below
/// kMaxBlock points when many values cross stages.
inline constexpr int64_t kStageBufferBytes = 24 << 10;
inline constexpr int64_t kMaxBlock = 256, kMinBlock = 32;
/// float32 values in one (AVX-512) vector: a loop or row of fewer points
/// fills none (one stage; "short" loops; row kernels over such rows take in
/// little point work).
inline constexpr int64_t kVectorPoints = 16;

/// What computing instruction i of `body` once costs (0 for loads and
/// constants), or -1 when it has no vector code.
int instr_cost(std::span<const Instr> body, size_t i);
inline int instr_cost(const Kernel& k, size_t i) {
  return instr_cost(k.body, i);
}
/// What computing `body` at one point costs, an instruction without vector
/// code counted as kScalarCost: the kernel's work per point.
inline constexpr int kScalarCost = 64;
int64_t body_cost(std::span<const Instr> body);

/// The stages of one loop over points.
struct Stages {
  /// Per instruction: the stage that computes it; -1 for instructions the
  /// loop does not compute (loads, constants, values computed elsewhere).
  std::vector<int> of;
  /// Per stage: 1 when its instructions have no vector code.
  std::vector<uint8_t> scalar;
  /// Per instruction: 1 when a later stage reads it (kept in a buffer).
  std::vector<uint8_t> carried;
  /// Points per block when there are several stages (0: one stage, no blocks).
  int64_t block = 0;

  int count() const { return static_cast<int>(scalar.size()); }
};

/// Cuts the instructions `computed` marks (in body order) into stages; those
/// `last` marks (a row kernel's folds; empty: none) go in the last stage.
Stages plan_stages(const Kernel& k, const std::vector<uint8_t>& computed,
                   const std::vector<uint8_t>& last = {});
/// One stage for all of them (a loop over fewer points than a vector holds:
/// nothing to vectorize or overlap); scalar when any instruction is.
Stages one_stage(const Kernel& k, const std::vector<uint8_t>& computed);

}  // namespace kiln::jit
