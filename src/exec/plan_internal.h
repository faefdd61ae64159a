// What plan.cpp and plan_memo.cpp share: a run's slots and arguments, and the
// values kept from variables (Plan::Memo).
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "kiln/executor.h"
#include "kiln/variable.h"

namespace kiln {

// Tensors on the stack for small plans (most function calls), on the heap
// beyond N: a run allocates nothing for its slots and kernel arguments.
template <size_t N>
class Scratch {
 public:
  explicit Scratch(size_t n) {
    if (n > N) heap_.resize(n);
    data_ = n > N ? heap_.data() : inline_;
  }
  /// Grows to at least n (kernel arguments of a wider step).
  void reserve(size_t n) {
    if (n <= N || n <= heap_.size()) return;
    heap_.resize(n);
    data_ = heap_.data();
  }
  Tensor& operator[](size_t i) { return data_[i]; }
  Tensor* data() { return data_; }

 private:
  Tensor inline_[N];
  std::vector<Tensor> heap_;
  Tensor* data_;
};

class Plan::Slots : public Scratch<16> {
 public:
  using Scratch<16>::Scratch;
};
class Plan::Args : public Scratch<8> {
 public:
  Args() : Scratch<8>(0) {}
};

// The contents one variable read had: its variable, and the buffer position
// and version of the value (versions are unique and renewed by every write).
struct VariableState {
  const VariableResource* variable = nullptr;
  const void* data = nullptr;
  uint64_t version = 0;
  bool operator==(const VariableState&) const = default;
};

// Fixed at compile time, then the values kept from the last run that computed
// them. A step is "derived" when its inputs are constants, variable reads and
// other derived steps' outputs; derived steps that compute (not views, not the
// reads) are skipped when the variables are unchanged, and so are reads and
// views only they consume. The kept values are the skipped steps' outputs that
// a step that still runs (or the caller) reads.
struct Plan::Memo {
  std::vector<uint8_t> skip;        // per step
  std::vector<int32_t> read_index;  // per step: its place in `reads`, or -1
  std::vector<int32_t> reads;       // the ReadVariableOp steps whose variables key the values
  std::vector<int32_t> kept_begin;  // per step + 1: its outputs' range in kept_slots
  std::vector<int32_t> kept_slots;  // the slots of the kept values
  size_t num_skipped = 0;

  mutable std::mutex mu;
  mutable std::vector<VariableState> key;  // what the kept values were computed from
  mutable std::vector<Tensor> values;      // per kept slot; empty: none kept
  mutable int misses_in_row = 0;
  mutable std::atomic<bool> off{false};  // variables change on every run: stop keeping
  mutable std::atomic<int64_t> hits{0};
};

// One run: skips (hit) or records the variables read and the kept values.
struct Plan::MemoRun {
  bool hit = false;
  std::vector<VariableState> key;
  std::vector<Tensor> values;
};

}  // namespace kiln
