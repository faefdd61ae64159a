// Control flow (TensorFlow's tf.cond and tf.while_loop). Eagerly they run as
// C++ control flow; while a function is traced, each branch or loop body is
// traced into its own graph (a Subgraph) and one If / While node is
// recorded, so the traced function decides at every call.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/tensor.h"

namespace kiln {

/// Runs `true_fn` when `pred` (a bool scalar) is true, else `false_fn`, and
/// returns that branch's results (tf.cond).
///
/// Eagerly only the chosen branch runs. While tracing, both branches are
/// traced (their own nodes go into subgraphs; symbolic tensors of the
/// enclosing function they use are captured) and an If node is recorded:
/// StatelessIf when neither branch has a stateful op, else If, which keeps
/// program order with the surrounding stateful ops (print, assign).
/// Both branches must return the same number of tensors with the same dtypes
/// (InvalidArgument naming the output index and both dtypes otherwise);
/// result shapes are the most specific shapes common to both branches.
/// `name` names the branch subgraphs ("<name>_true", "<name>_false").
std::vector<Tensor> cond(const Tensor& pred, const std::function<std::vector<Tensor>()>& true_fn,
                         const std::function<std::vector<Tensor>()>& false_fn,
                         std::string name = "cond");

struct WhileOptions {
  /// Per loop variable: the shapes it may take across iterations (unknown
  /// dims = -1, or Shape::unknown_rank()). Missing or nullopt: the initial
  /// shape, which the body must then keep. Empty: no invariants.
  std::vector<std::optional<Shape>> shape_invariants;
  /// Stop after this many iterations even if `cond` still holds; -1: no limit.
  int64_t maximum_iterations = -1;
  /// Names the cond/body subgraphs ("<name>_cond", "<name>_body").
  std::string name = "while";
};

/// Repeats `loop_vars = body(loop_vars)` while `cond(loop_vars)` (a bool
/// scalar) holds and returns the final loop_vars (tf.while_loop).
///
/// The body must return as many tensors as there are loop variables, each
/// with the variable's dtype (InvalidArgument naming the variable otherwise)
/// and a shape within its invariant (default: its initial shape; a change
/// without an invariant is an error suggesting shape_invariants).
/// Eagerly it is a C++ loop. While tracing, cond and body are traced once
/// (loop variables as placeholders with the invariant shapes) into a While
/// node, which is always stateful: it is never pruned, folded or merged, and
/// runs in program order with other stateful ops; stateful ops in its body
/// run every iteration, in order.
std::vector<Tensor> while_loop(
    const std::function<Tensor(const std::vector<Tensor>&)>& cond,
    const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& body,
    std::vector<Tensor> loop_vars, WhileOptions opts = {});

/// A list of same-dtype tensors with value semantics (tf.TensorArray), for
/// accumulating results in a while_loop. Every write returns a new
/// TensorArray; the old one is unchanged. Works eagerly and traced (ops
/// TensorListReserve/SetItem/GetItem/Stack/FromTensor/Length on a scalar
/// resource handle). In a while_loop, pass handle() as a loop variable and
/// rewrap it in the body with with_handle(). With infer_shape (the
/// default) elements must all have the same shape (fixed by the first
/// write, or by element_shape); without it, their shapes may differ (read
/// works, stack needs them equal). Unwritten elements read and stack as
/// zeros when their shape is known.
///
/// The static element shape (element_shape(), the static shape of read()
/// and stack()) is the given one merged with the shapes of the values
/// written. Writes traced inside a while_loop or cond body (symbolic
/// handles) also teach it to every TensorArray derived from the same one
/// (by with_handle, write, unstack), so the TensorArray rewrapped after the
/// loop knows it, as TensorFlow's does; writes of differing shapes teach
/// only what they have in common. stack() has static length size when the
/// size is a known constant and not dynamic_size.
///
/// A write shares the list's storage with the old list and copies
/// O(log size) of it (so n writes in a loop cost O(n log n)); a write whose
/// input handle nothing else holds any more (straight-line writes in a
/// traced function) is done in place.
class TensorArray {
 public:
  /// `size` elements (an int32/int64 scalar); with dynamic_size, writes past
  /// the end grow the array.
  TensorArray(DType dtype, const Tensor& size, bool dynamic_size = false,
              Shape element_shape = Shape::unknown_rank(), bool infer_shape = true);
  TensorArray(DType dtype, int64_t size, bool dynamic_size = false,
              Shape element_shape = Shape::unknown_rank(), bool infer_shape = true);

  /// A TensorArray like this one over `handle` (a loop variable). A
  /// concrete handle's list also gives its size and, with infer_shape, its
  /// element shape (an eager loop's result knows both).
  TensorArray with_handle(Tensor handle) const;
  /// A new TensorArray with element `index` set to `value`.
  TensorArray write(const Tensor& index, const Tensor& value) const;
  TensorArray write(int64_t index, const Tensor& value) const;
  Tensor read(const Tensor& index) const;
  Tensor read(int64_t index) const;
  /// The elements stacked along a new axis 0.
  Tensor stack() const;
  /// A new TensorArray holding the slices of `value` along axis 0.
  TensorArray unstack(const Tensor& value) const;
  /// The number of elements (int32 scalar).
  Tensor size() const;

  const Tensor& handle() const { return handle_; }
  DType dtype() const { return dtype_; }
  /// The statically known element shape (see the class comment).
  Shape element_shape() const;
  bool dynamic_size() const { return dynamic_size_; }
  bool infer_shape() const { return infer_shape_; }
  /// The size when it is a known constant and not dynamic_size, else -1.
  int64_t static_size() const { return static_size_; }

 private:
  struct Learned;  // element shape taught by traced writes (tensor_array.cpp)
  TensorArray() = default;
  void learn(const Shape& value_shape) const;  // teaches the family (learned_)
  Tensor handle_;
  DType dtype_ = DType::kInvalid;
  Shape element_shape_ = Shape::unknown_rank();
  std::shared_ptr<Learned> learned_;
  bool dynamic_size_ = false;
  bool infer_shape_ = true;
  int64_t static_size_ = -1;
};

/// The (optimized) graph of a control-flow body traced by cond/while_loop,
/// e.g. from an If node's then_branch attr; nullptr for other subgraphs.
const Graph* subgraph_graph(const Subgraph& s);

}  // namespace kiln
