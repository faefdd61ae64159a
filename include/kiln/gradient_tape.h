// GradientTape: reverse-mode automatic differentiation (tf.GradientTape).
//
// While a tape records, every op call of its thread that reads a watched
// tensor (or a value computed from one) is recorded with its inputs and
// outputs; gradient() then walks the record backwards, calling each op's
// gradient rule (the `grad` slot of its table row). Rules are kiln ops, so:
// - eagerly, gradient() computes values now;
// - inside a traced function, the tape records symbolic ops and gradient()
//   adds the backward ops to the same graph;
// - a tape that records while another computes a gradient sees the backward
//   ops, which gives higher-order gradients (nest the tapes).
//
//   Tensor x(3.f);
//   GradientTape tape;
//   tape.watch(x);
//   Tensor y = x * x;
//   Tensor dy_dx = tape.gradient(y, x);  // 6
//
// Recording runs from construction until stop() or destruction, on the
// constructing thread and in the execution context (eager, or one trace)
// that was current then. Only float32/float64 values are tracked.
#pragma once
#include <memory>
#include <vector>

#include "kiln/tensor.h"
#include "kiln/variable.h"

namespace kiln {

/// What gradient() returns for a source the targets do not depend on.
enum class UnconnectedGradients {
  kNone,  ///< an undefined Tensor (TensorFlow's None)
  kZero,  ///< zeros of the source's dtype and shape
};

/// A gradient source: a tensor or a variable.
class GradSource {
 public:
  GradSource(const Tensor& t) : tensor_(t) {}                          // NOLINT: implicit by design
  GradSource(const Variable& v) : variable_(v), is_variable_(true) {}  // NOLINT
  bool is_variable() const { return is_variable_; }
  const Tensor& tensor() const { return tensor_; }
  const Variable& variable() const { return variable_; }

 private:
  Tensor tensor_;
  Variable variable_;
  bool is_variable_ = false;
};

class GradientTape {
 public:
  /// Starts recording. A `persistent` tape allows several gradient() calls;
  /// with `watch_accessed_variables`, trainable variables read while
  /// recording are watched automatically.
  explicit GradientTape(bool persistent = false, bool watch_accessed_variables = true);
  /// Stops recording and frees the record.
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  /// Ensures `t` is traced by the tape (float32/float64 tensors; other
  /// dtypes are ignored, as they carry no gradient). Undefined: error.
  void watch(const Tensor& t);
  void watch(const Variable& v);
  void watch(const std::vector<GradSource>& sources);
  /// The variables this tape watches, in the order they were first watched
  /// (explicitly or by being read while recording).
  std::vector<Variable> watched_variables() const;

  /// The gradient of `target` (summed over its elements, or weighted by
  /// `output_gradient`) with respect to `source`. Undefined result (or
  /// zeros, per `unconnected`) when target does not depend on source.
  Tensor gradient(const Tensor& target, const GradSource& source,
                  const Tensor& output_gradient = Tensor(),
                  UnconnectedGradients unconnected = UnconnectedGradients::kNone);
  /// One gradient per source.
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<GradSource>& sources,
                               const Tensor& output_gradient = Tensor(),
                               UnconnectedGradients unconnected = UnconnectedGradients::kNone);
  /// Several targets: their gradients add up. `output_gradients` is empty
  /// or has one tensor per target (of its dtype and shape; an undefined
  /// entry means ones).
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets,
                               const std::vector<GradSource>& sources,
                               const std::vector<Tensor>& output_gradients = {},
                               UnconnectedGradients unconnected = UnconnectedGradients::kNone);
  /// The Jacobian of `target` with respect to each source (TensorFlow's
  /// GradientTape.jacobian): shape target.shape + source.shape, entry
  /// [i..., j...] the derivative of target[i...] by source[j...]. Computed as
  /// one vector-Jacobian product per target element, so the target needs a
  /// known size; it counts as one gradient() call. Unconnected: undefined (or
  /// zeros, per `unconnected`).
  std::vector<Tensor> jacobian(const Tensor& target, const std::vector<GradSource>& sources,
                               UnconnectedGradients unconnected = UnconnectedGradients::kNone);
  /// Errors: InvalidArgument for an undefined or non-float target or source
  /// tensor, output_gradients of the wrong count, dtype or shape;
  /// FailedPrecondition for a second gradient() on a non-persistent tape;
  /// Unimplemented when an op on the path has no gradient rule. A
  /// non-persistent tape stops recording when gradient() is called (as
  /// TensorFlow's does).

  /// Pauses this tape's recording until the returned guard ends.
  class StopRecording {
   public:
    ~StopRecording();
    StopRecording(StopRecording&& o) noexcept;
    StopRecording(const StopRecording&) = delete;
    StopRecording& operator=(const StopRecording&) = delete;
    StopRecording& operator=(StopRecording&&) = delete;

   private:
    friend class GradientTape;
    explicit StopRecording(GradientTape* tape);
    GradientTape* tape_;
    bool was_recording_;
  };
  [[nodiscard]] StopRecording stop_recording();

  /// Clears everything recorded and watched; recording continues (a fresh
  /// tape, as TensorFlow's reset()).
  void reset();
  /// Ends recording (the end of TensorFlow's `with` block). gradient() may
  /// still be called afterwards.
  void stop();
  /// Resumes recording after stop(), keeping the record.
  void start();

  bool persistent() const;
  bool recording() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
