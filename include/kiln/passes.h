// Graph optimization passes and their driver. Each pass is a plain function
// over a Graph (testable alone); optimize() runs them in a fixed order,
// switchable by name, and records what each changed.
//
// Passes keep node order topological, never touch stateful ops (beyond
// keeping them), keep every Placeholder (the signature) and never change the
// dtype or static shape of a value that is still used.
#pragma once
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/graph.h"

namespace kiln {

/// (node name, op type), e.g. ("Cast", "Cast").
using NodeRef = std::pair<std::string, std::string>;

/// What one pass run changed.
struct PassResult {
  std::string pass;  ///< the pass's name ("prune", "fold_constants", ...)
  /// Nodes taken out of the graph, in graph order.
  std::vector<NodeRef> removed;
  /// Nodes created (constants for multi-output folds).
  std::vector<NodeRef> added;
  /// Nodes changed in place: (name, what happened, e.g. "AddV2 -> Const").
  std::vector<NodeRef> rewritten;
  double millis = 0;  ///< wall time of the pass

  bool changed() const { return !removed.empty() || !added.empty() || !rewritten.empty(); }
  /// "removed 3 (e.g. 'Cast' (Cast), ...), rewritten 1 (...)" or "no change".
  std::string summary(size_t max_examples = 3) const;
};

/// Default cap on the elements of one folded constant (per output).
inline constexpr int64_t kDefaultMaxFoldElements = int64_t{1} << 16;

struct OptimizeOptions {
  /// Pass names to skip (see pass_names()); an unknown name is an
  /// InvalidArgumentError. Disabling "prune" skips both prune runs;
  /// disabling "fuse" skips every fusion pass ("fuse_conv" too).
  std::set<std::string> disabled;
  /// Run Graph::verify() after every pass (InternalError naming the pass).
  bool verify = true;
  /// Constant folding leaves a node alone when an output would have more
  /// elements than this (huge constants are not baked into the graph).
  int64_t max_fold_elements = kDefaultMaxFoldElements;
  /// False: the elementwise fusion pass ("fuse") is skipped and fuse_conv
  /// still runs (jit_compile: its compiler takes the elementwise chains).
  bool elementwise_fusion = true;
};

/// Everything optimize() did, pass by pass.
struct OptimizeReport {
  std::string function_name;
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  std::vector<PassResult> passes;  ///< in run order (skipped passes absent)

  /// Ops removed by the first prune because nothing used their result,
  /// excluding Const and Placeholder nodes: what the function layer's
  /// "returns no value; N operations (e.g. 'Cast') were removed" warning
  /// names. Empty when pruning was disabled.
  std::vector<NodeRef> unused_ops() const;
  /// Multi-line debug dump: one line per pass run with its summary.
  std::string to_string() const;
};

/// The passes optimize() runs, in order ("prune" appears twice).
std::span<const std::string_view> pass_names();

/// Runs the pass pipeline on `g` in place.
OptimizeReport optimize(Graph& g, const OptimizeOptions& opts = {});

/// Replaces every PartitionedCall / StatefulPartitionedCall node by the
/// called function's traced graph (nodes named "<call>/<node>"); nested calls
/// are inlined too. The call's control inputs pass to the inlined stateful
/// ops, and control edges on the call move to them.
PassResult inline_calls(Graph& g);

/// Keeps only what the graph outputs need, every stateful op and what it
/// needs (data and control inputs), and every Placeholder. Reports the
/// removed nodes.
PassResult prune(Graph& g);

/// Evaluates nodes whose data inputs are all constants (not stateful, not
/// random, no stateful control inputs) and turns them into Const nodes, plus
/// Shape/Size/Rank of inputs whose static shape is fully known. A node whose
/// output would exceed `max_elements`, or whose kernel fails (e.g. integer
/// division by zero, left to fail at run time), is left as is.
PassResult fold_constants(Graph& g, int64_t max_elements = kDefaultMaxFoldElements);

/// Common-subexpression elimination: merges nodes with the same op, attrs,
/// inputs (either order for commutative ops) and control inputs. Constants
/// merge when they are the same tensor or small and byte-equal. Stateful ops
/// never merge.
PassResult cse(Graph& g);

/// Algebraic simplification: x*1, 1*x, x+0, 0+x, x-0, x/1 (when the
/// constant cannot change x's shape or dtype), Identity bypass (except
/// Identity nodes that are graph outputs), Transpose of Transpose (removed
/// when the permutations cancel, else merged), Reshape of Reshape (merged;
/// removed when the shape does not change), Cast to the same dtype.
/// Note: as TensorFlow's grappler, x + 0 -> x also for floats, where it
/// differs from IEEE only in the sign of a zero result for x = -0.0.
PassResult simplify(Graph& g);

/// fuse: chains of float32 elementwise ops with one static shape (scalars
/// broadcast) whose intermediate values have no other user become one
/// FusedElementwise node evaluated block by block (no intermediate tensors).
PassResult fuse_elementwise(Graph& g);

/// fuse_conv: a float32 Conv2D or DepthwiseConv2dNative with a static
/// channel count, followed by a chain of epilogue steps whose intermediate
/// values have no other user (and are not graph outputs or control targets),
/// becomes one _FusedConv2D / _FusedDepthwiseConv2dNative node (one oneDNN
/// primitive with bias and post-ops). Steps: BiasAdd; Mul, AddV2 (either
/// operand order) and Sub (y - a) with a float32 operand of shape [C],
/// [1, ..., 1, C] or one element, or AddV2 with one of the output's fully
/// defined shape (a residual); Relu; Relu6 as Minimum(Relu(y), c >= 0);
/// ClipByValue with constant scalar bounds (lo <= hi); Sigmoid; Tanh; swish
/// as Mul(y, Sigmoid(y)); hard swish as Keras writes it, Mul(y, RealDiv(
/// Minimum(Relu(AddV2(y, 3)), 6), 6)) (or a Mul by 1/6). Operands stay
/// runtime inputs; the kernel folds the leading affine steps (a batch norm)
/// into the filter as it packs it. Runs before fuse_elementwise, which would
/// otherwise take the epilogue's elementwise ops.
PassResult fuse_conv(Graph& g);

/// fuse_attention: BatchMatMulV2(Softmax(s * BatchMatMulV2(q, k, adj_y)), v)
/// of float32 rank-4 values (Keras' MultiHeadAttention, the TensorFlow
/// transformer tutorial's scaled_dot_product_attention) whose intermediate
/// values have no other user becomes one _FusedAttention node: the scores of
/// a block of query rows stay in cache between the products. s: scalar
/// float32 constants multiplying (Mul) or dividing (RealDiv) the scores or q.
/// A mask joins it: an AddV2 to the scores that does not enlarge them, or
/// Keras' SelectV2(mask, scores, fill) whose softmax is multiplied by the
/// mask cast to float32 (or that cast folded to a constant).
/// A Transpose producing q, k or v (the heads' split) is read through, and
/// one taking the result (the heads' merge, keeping the last axis) is written
/// through, so neither is computed. Runs in every mode but check_numerics
/// (jit_compile keeps it: the JIT would compute the same products).
PassResult fuse_attention(Graph& g);

/// fuse_rnn: the While loop of a Keras LSTM, GRU or SimpleRNN layer (tanh and
/// sigmoid, no mask) becomes one _FusedLSTM, _FusedGRU or _FusedSimpleRNN
/// node. The LSTM's body computes z = x[t] + h W (GatherV2 of a captured [T,
/// B, 4U] float32 projection, a product by a variable or captured [U, 4U]
/// value), the cell c = sigmoid(z_f) c + sigmoid(z_i) tanh(z_c), h =
/// sigmoid(z_o) tanh(c); the GRU's (Keras' reset_after form) splits x[t] ([T,
/// B, 3U]) and p = h W (+ a loop-invariant recurrent bias: a capture or
/// constant, or a slice of a variable's value) into gates z, r, h, and
/// computes h = z h + (1 - z) tanh(x_h + sigmoid(x_r + p_r) p_h), z =
/// sigmoid(x_z + p_z); SimpleRNN's h = tanh(x[t] + p), p as the GRU's. Each
/// writes h to a TensorList at t; a cond t < n; t starting at 0, the list
/// reserved for n elements and read only by a TensorListStack, the counter's
/// result unused. The kernels run each block of the batch's rows through
/// every step on one thread, with no barrier per step. Runs in every mode but
/// check_numerics.
PassResult fuse_rnn(Graph& g);

/// fold_pad: a Conv2D or DepthwiseConv2dNative with VALID padding whose input
/// is a Pad (no control inputs) of a value with static height and width, with
/// constant paddings of the height and width only and a constant +0 fill,
/// reads that value with SAME padding instead when SAME pads exactly those
/// rows and columns (Keras' ZeroPadding2D(correct_pad(...)) before a strided
/// convolution, as MobileNet and EfficientNet write it): the padded copy is
/// never made (prune drops the Pad once unused).
PassResult fold_pad(Graph& g);

/// conv_float_filters: a bfloat16 Conv2D or DepthwiseConv2dNative whose filter
/// is a Cast of a float32 value (Keras's mixed_bfloat16 casts the variable on
/// every call) reads the float32 value instead, as a _FusedConv2D /
/// _FusedDepthwiseConv2dNative without epilogue: the convolution rounds it to
/// bfloat16 while packing it, once per version of the variable's buffer, where
/// a new cast buffer each call was packed on every call. Runs in every mode
/// (not a fusion: jit_compile and check_numerics keep it).
PassResult conv_float_filters(Graph& g);

/// matmul_float_weights: a bfloat16 MatMul whose y is a Cast of a float32
/// value of rank 2 (a mixed_bfloat16 Dense or EinsumDense kernel, cast on every
/// call) reads the float32 value instead, as a _FusedMatMul: the product packs
/// it to bfloat16 in oneDNN's layout once per version of its buffer. The
/// bias (a float32 [n]) and relu that mixed precision adds after the product
/// in float32 between Casts join it as its epilogue (docs/OPS.md). Runs in
/// every mode, as conv_float_filters.
PassResult matmul_float_weights(Graph& g);

/// schedule_collectives: moves each CollectiveAllReduceStart as early as
/// its inputs allow (its inputs' computations first) and each
/// CollectiveAllReduceDone as late as its users allow, so a gradient
/// bucket's all-reduce runs while the rest of the backward pass computes.
/// Every other stateful node keeps its order, and the starts keep theirs;
/// the result is the same on every worker for the same graph.
PassResult schedule_collectives(Graph& g);

}  // namespace kiln
