// Internal: helpers shared by the Function and ConcreteFunction sources.
#pragma once
#include <atomic>
#include <span>
#include <string>
#include <vector>

#include "kiln/function.h"

namespace kiln::detail {

// Replaces tensor/spec leaves of `v` by `leaf(i)` in walk order.
template <typename F>
Value map_leaves(const Value& v, size_t& i, F&& leaf) {
  switch (v.kind()) {
    case Value::Kind::kTensor:
    case Value::Kind::kSpec: return leaf(i++, v);
    case Value::Kind::kList:
    case Value::Kind::kTuple:
    case Value::Kind::kDict: {
      std::vector<Value> items;
      for (const Value& x : v.items()) items.push_back(map_leaves(x, i, leaf));
      return v.with_items(std::move(items));
    }
    default: return v;
  }
}

/// "float32 Tensor, shape=(2,)".
std::string describe_spec(const ArgSpec& s);

/// set_call_observer's observer (function.cpp); reports `cf` when set.
extern std::atomic<CallObserver> g_call_observer;
inline void observe_call(const ConcreteFunction& cf) {
  if (CallObserver o = g_call_observer.load(std::memory_order_relaxed)) o(cf);
}

/// set_blocking_hooks' hooks (function.cpp).
extern std::atomic<void* (*)()> g_block_release;
extern std::atomic<void (*)(void*)> g_block_reacquire;

/// While alive, the binding's global lock (Python's GIL) is released, if the
/// binding installed hooks and this thread holds it.
class BindingLockReleased {
 public:
  BindingLockReleased() {
    void* (*release)() = g_block_release.load(std::memory_order_relaxed);
    token_ = release ? release() : nullptr;
  }
  ~BindingLockReleased() {
    if (token_) g_block_reacquire.load(std::memory_order_relaxed)(token_);
  }
  BindingLockReleased(const BindingLockReleased&) = delete;
  BindingLockReleased& operator=(const BindingLockReleased&) = delete;

 private:
  void* token_;
};

/// Runs a plan with the binding's lock released, so other threads (tf.data's
/// prefetch and parallel map) run meanwhile. Kernels that call back into
/// Python take the lock themselves.
template <typename Runnable>
std::vector<Tensor> run_released(const Runnable& r, std::span<const Tensor> inputs) {
  BindingLockReleased unlocked;
  return r.run(inputs);
}

}  // namespace kiln::detail
