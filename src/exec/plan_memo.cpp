// Values computed from variables alone, kept between runs of a plan (see
// kiln/executor.h and Plan::Memo in plan_internal.h).
#include "kiln/config.h"
#include "kiln/profiler.h"
#include "plan_internal.h"

namespace kiln {
namespace {

// Kept values past this many bytes are not kept (they would double a model's
// weights if a function derived large tensors from them every call).
constexpr int64_t kMaxKeptBytes = int64_t{256} << 20;
// A plan whose variables changed before this many runs in a row (a training
// step's forward pass) stops keeping values.
constexpr int kMaxMissesInRow = 8;

enum Kind : uint8_t { kNotDerived, kRead, kViewOf, kComputed };

}  // namespace

Plan::~Plan() = default;

void Plan::analyse_memo() {
  const size_t n = steps_.size(), n_inputs = input_slots_.size();
  std::vector<int32_t> producer(static_cast<size_t>(num_slots_), -1);
  for (size_t k = 0; k < n; ++k)
    for (int32_t o = 0; o < steps_[k].num_out; ++o)
      producer[static_cast<size_t>(steps_[k].out_begin + o)] = static_cast<int32_t>(k);
  std::vector<uint8_t> kind(n, kNotDerived);
  for (size_t k = 0; k < n; ++k) {
    const Step& s = steps_[k];
    if (s.op->id == OpId::ReadVariable) {
      // A handle from a constant or an input, read once per run.
      if (s.in_slots.size() == 1 && s.in_slots[0] < 0) kind[k] = kRead;
      continue;
    }
    if (s.op->has(kStateful)) return;  // writes state (or depends on it): keep nothing
    bool derived = !s.in_slots.empty(), any = false;
    for (int32_t slot : s.in_slots) {
      if (slot < 0) {
        derived &= static_cast<size_t>(-1 - slot) >= n_inputs;  // a constant
      } else {
        const int32_t p = producer[static_cast<size_t>(slot)];
        derived &= p >= 0 && kind[static_cast<size_t>(p)] != kNotDerived;
        any = true;
      }
    }
    if (derived && any) kind[k] = s.op->has(kView) ? kViewOf : kComputed;
  }
  // Who reads each step's outputs: later steps, or the caller.
  std::vector<std::vector<int32_t>> users(n);
  std::vector<uint8_t> returned(n, 0);
  for (size_t k = 0; k < n; ++k)
    for (int32_t slot : steps_[k].in_slots)
      if (slot >= 0)
        users[static_cast<size_t>(producer[static_cast<size_t>(slot)])].push_back(
            static_cast<int32_t>(k));
  for (int32_t slot : output_slots_)
    if (slot >= 0 && producer[static_cast<size_t>(slot)] >= 0)
      returned[static_cast<size_t>(producer[static_cast<size_t>(slot)])] = 1;
  auto m = std::make_unique<Memo>();
  m->skip.assign(n, 0);
  // Computed steps are skipped; reads and views only when every user is.
  for (size_t k = n; k-- > 0;) {
    if (kind[k] == kComputed) {
      m->skip[k] = 1;
    } else if (kind[k] != kNotDerived && !returned[k]) {
      bool all = true;
      for (int32_t u : users[k]) all &= m->skip[static_cast<size_t>(u)] != 0;
      m->skip[k] = all;
    }
    m->num_skipped += m->skip[k];
  }
  // Kept: skipped computed outputs read by a running step or the caller.
  m->kept_begin.assign(n + 1, 0);
  for (size_t k = 0; k < n; ++k) {
    m->kept_begin[k] = static_cast<int32_t>(m->kept_slots.size());
    if (kind[k] != kComputed) continue;
    for (int32_t o = 0; o < steps_[k].num_out; ++o) {
      const int32_t slot = steps_[k].out_begin + o;
      bool needed = false;
      for (int32_t slot_out : output_slots_) needed |= slot_out == slot;
      for (int32_t u : users[k]) {
        if (m->skip[static_cast<size_t>(u)]) continue;
        for (int32_t in : steps_[static_cast<size_t>(u)].in_slots) needed |= in == slot;
      }
      if (needed) m->kept_slots.push_back(slot);
    }
  }
  m->kept_begin[n] = static_cast<int32_t>(m->kept_slots.size());
  if (m->kept_slots.empty()) return;
  // The reads the skipped steps depend on key the kept values.
  std::vector<uint8_t> needs(n, 0);
  for (size_t k = n; k-- > 0;) {
    if (kind[k] == kComputed) needs[k] = 1;
    if (!needs[k]) continue;
    for (int32_t slot : steps_[k].in_slots)
      if (slot >= 0) needs[static_cast<size_t>(producer[static_cast<size_t>(slot)])] = 1;
  }
  m->read_index.assign(n, -1);
  for (size_t k = 0; k < n; ++k)
    if (needs[k] && kind[k] == kRead) {
      m->read_index[k] = static_cast<int32_t>(m->reads.size());
      m->reads.push_back(static_cast<int32_t>(k));
    }
  memo_ = std::move(m);
}

bool Plan::memo_begin(MemoRun& mr, Slots& slots, std::span<const Tensor> inputs) const {
  if (!memo_ || memo_->off.load(std::memory_order_relaxed) || !config().memoize_variable_values)
    return false;
  const Memo& m = *memo_;
  mr.key.resize(m.reads.size());
  for (size_t i = 0; i < m.reads.size(); ++i) {
    // Reads take their handle from a constant or an input (analyse_memo).
    const size_t e = static_cast<size_t>(-1 - steps_[static_cast<size_t>(m.reads[i])].in_slots[0]);
    const Tensor& handle = e < inputs.size() ? inputs[e] : constants_[e - inputs.size()].second;
    if (!handle.defined() || handle.is_symbolic() || handle.dtype() != DType::kResource)
      return false;
    const auto* v = dynamic_cast<const VariableResource*>(handle.resource());
    if (!v) return false;  // the read step names the error
    const Tensor value = v->read();
    // Memory without a version (wrapped by an owner who may change it) keys nothing.
    if (!value.defined() || !value.buffer() || value.buffer()->version() == 0) return false;
    mr.key[i] = {v, value.raw_data(), value.buffer()->version()};
  }
  {
    std::lock_guard<std::mutex> lock(m.mu);
    if (!m.values.empty() && m.key == mr.key) {
      for (size_t j = 0; j < m.kept_slots.size(); ++j)
        slots[static_cast<size_t>(m.kept_slots[j])] = m.values[j];
      m.misses_in_row = 0;
      mr.hit = true;
    }
  }
  if (mr.hit) {
    m.hits.fetch_add(1, std::memory_order_relaxed);
    profiler::ScopedTrace trace("kept values", "executor", 2);
    if (trace.active()) {
      trace.add_arg("skipped steps", str_cat(m.num_skipped));
      trace.add_arg("values", str_cat(m.kept_slots.size()));
    }
    return true;
  }
  // Recorded afresh from what this run's reads return.
  for (VariableState& st : mr.key) st.data = nullptr, st.version = 0;
  mr.values.assign(m.kept_slots.size(), Tensor());
  return true;
}

void Plan::memo_record(size_t k, MemoRun& mr, Slots& slots) const {
  const Memo& m = *memo_;
  if (const int32_t i = m.read_index[k]; i >= 0) {
    const Tensor& value = slots[static_cast<size_t>(steps_[k].out_begin)];
    if (value.defined() && value.buffer())
      mr.key[static_cast<size_t>(i)].data = value.raw_data(),
      mr.key[static_cast<size_t>(i)].version = value.buffer()->version();
  }
  for (int32_t j = m.kept_begin[k]; j < m.kept_begin[k + 1]; ++j)
    mr.values[static_cast<size_t>(j)] =
        slots[static_cast<size_t>(m.kept_slots[static_cast<size_t>(j)])];
}

void Plan::memo_end(MemoRun& mr) const {
  if (mr.hit) return;
  const Memo& m = *memo_;
  int64_t bytes = 0;
  bool complete = true;
  for (const VariableState& st : mr.key) complete &= st.version != 0;
  for (const Tensor& t : mr.values) {
    complete &= t.defined() && !t.is_symbolic();
    if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
  }
  std::lock_guard<std::mutex> lock(m.mu);
  if (++m.misses_in_row >= kMaxMissesInRow) {
    m.off.store(true, std::memory_order_relaxed);
    m.values.clear();
    return;
  }
  if (!complete || bytes > kMaxKeptBytes) return;
  m.key = std::move(mr.key);
  m.values = std::move(mr.values);
}

size_t Plan::num_memoized_steps() const {
  return memo_ ? memo_->num_skipped : 0;
}

int64_t Plan::memo_hits() const {
  return memo_ ? memo_->hits.load(std::memory_order_relaxed) : 0;
}

}  // namespace kiln
