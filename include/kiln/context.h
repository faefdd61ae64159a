// Execution contexts. An op call goes to the current thread's context: the
// eager context runs the kernel now; a tracing context (graph functions)
// records a node instead. Op front functions never know which.
#pragma once
#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

#include "kiln/op.h"
#include "kiln/tensor.h"

namespace kiln {

class ExecutionContext {
 public:
  virtual ~ExecutionContext() = default;
  /// Runs or records `op` on `inputs` with `attrs` (already complete).
  virtual void execute(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                       std::vector<Tensor>& outputs) = 0;
  /// Single-output fast path.
  virtual Tensor execute1(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs);
  /// True for contexts that record instead of running.
  virtual bool is_tracing() const { return false; }
};

/// The eager context: inference, then the kernel, now.
class EagerContext final : public ExecutionContext {
 public:
  void execute(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
               std::vector<Tensor>& outputs) override;
  Tensor execute1(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs) override;
  static EagerContext& instance();
};

/// The current thread's context (eager unless a scope says otherwise).
ExecutionContext& current_context();

/// Makes `ctx` current for this thread until the scope ends (nests).
class ContextScope {
 public:
  explicit ContextScope(ExecutionContext& ctx);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  ExecutionContext* prev_;
};

/// Sees every op call dispatched through execute_op / call_op on its thread,
/// after it ran or was recorded (the gradient tapes, src/autodiff/).
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  virtual void on_op(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                     std::span<const Tensor> outputs) = 0;
};
/// This thread's observer, nullptr when none (one thread-local load per op).
OpObserver* op_observer();
/// Installs `obs` (or nullptr) for this thread.
void set_op_observer(OpObserver* obs);

/// Runs or records `op` (attrs complete) in the current context and reports
/// the call to the thread's OpObserver. The dispatch point of every op call.
void execute_op(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                std::vector<Tensor>& outputs);

/// Runs one op through the current context. Used by front functions.
std::vector<Tensor> call_op(OpId id, std::span<const Tensor> inputs, Attrs attrs = {});
Tensor call_op1(OpId id, std::span<const Tensor> inputs, const Attrs& attrs = {});
inline Tensor call_op1(OpId id, std::initializer_list<Tensor> inputs, const Attrs& attrs = {}) {
  return call_op1(id, std::span<const Tensor>(inputs.begin(), inputs.size()), attrs);
}

/// Checks an op call's inputs before inference: the op is implemented, the
/// input count matches its row (variadic last input allowed), and every
/// input is defined. Throws InvalidArgument/Unimplemented naming the op.
void check_op_inputs(const OpDef& op, std::span<const Tensor> inputs);

/// Throws InvalidArgumentError naming `op` (and `node`, when not empty) if a
/// float tensor in `outputs` holds NaN or Inf. Used when
/// config().check_numerics is on.
void check_numerics(const OpDef& op, std::span<const Tensor> outputs, std::string_view node = {});

/// Runs the kernel of `op` directly on concrete inputs (inference included).
/// Used by the eager context and by later executors/constant folding.
void run_kernel(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                std::vector<Tensor>& outputs);

}  // namespace kiln
