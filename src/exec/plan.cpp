#include <unordered_map>

#include "core/denormal.h"
#include "kiln/config.h"
#include "kiln/context.h"
#include "kiln/executor.h"
#include "kiln/profiler.h"
#include "kiln/thread_pool.h"
#include "plan_internal.h"

namespace kiln {
namespace {

// Slot numbers below zero name a tensor the plan reads in place instead of
// copying it into a slot: -1 - i is input i, then constant i - num_inputs.
int32_t external(size_t i) {
  return -1 - static_cast<int32_t>(i);
}

int64_t elements_or_unknown(const Shape& s) {
  return s.is_fully_defined() ? s.num_elements() : -1;
}

}  // namespace

std::unique_ptr<Plan> Plan::compile(const Graph& graph) {
  auto plan = std::unique_ptr<Plan>(new Plan());
  plan->function_name_ = graph.function_name();
  std::unordered_map<const Node*, int32_t> first_slot;
  int32_t next = 0;
  for (const auto& ref : graph.nodes()) {
    first_slot[ref.get()] = next;
    next += static_cast<int32_t>(ref->outputs().size());
  }
  plan->num_slots_ = next;
  // Identity nodes (function outputs are named by them) cost no step: their
  // users read the identity's input slot directly.
  auto resolve = [](Edge e) {
    while (e.node->op().id == OpId::Identity && e.node->control_inputs().empty())
      e = e.node->inputs()[0];
    return e;
  };
  // Inputs and constants are read where they are (see external()).
  std::unordered_map<const Node*, int32_t> external_of;
  for (size_t i = 0; i < graph.inputs().size(); ++i) external_of[graph.inputs()[i]] = external(i);
  size_t num_constants = 0;
  for (const auto& ref : graph.nodes())
    if (ref->op().id == OpId::Const)
      external_of[ref.get()] = external(graph.inputs().size() + num_constants++);
  auto slot_of = [&](const Edge& e) {
    const Edge r = resolve(e);
    auto it = external_of.find(r.node);
    if (it != external_of.end()) return it->second;
    auto slot = first_slot.find(r.node);
    if (slot == first_slot.end())  // a pass left an edge to a node it removed
      throw InternalError(str_cat("graph '", graph.function_name(),
                                  "': an edge reads a node that is not in the graph"));
    return slot->second + r.index;
  };

  // Last step index that reads each slot; outputs and constants live forever.
  constexpr int32_t kForever = INT32_MAX;
  std::vector<int32_t> last_use(static_cast<size_t>(next), -1);
  for (const Edge& e : graph.outputs())
    if (slot_of(e) >= 0) last_use[static_cast<size_t>(slot_of(e))] = kForever;

  std::unordered_map<const Node*, int32_t> step_of;  // for the parallel analysis
  std::unordered_map<const Node*, size_t> input_pos;
  for (size_t i = 0; i < graph.inputs().size(); ++i) input_pos[graph.inputs()[i]] = i;
  plan->input_slots_.resize(graph.inputs().size(), -1);
  int32_t last_stateful = -1;

  for (const auto& ref : graph.nodes()) {
    const Node* n = ref.get();
    const int32_t base = first_slot.at(n);
    if (n->op().id == OpId::Placeholder) {
      auto it = input_pos.find(n);
      if (it == input_pos.end())
        throw InternalError(str_cat("graph '", graph.function_name(), "': placeholder '", n->name(),
                                    "' is not a graph input"));
      plan->input_slots_[it->second] = base;
      continue;
    }
    if (n->op().id == OpId::Const) {
      plan->constants_.emplace_back(base, std::get<Tensor>(n->attr("value")));
      continue;
    }
    if (n->op().id == OpId::Identity && n->control_inputs().empty()) continue;
    Step s;
    s.op = &n->op();
    s.name = n->name();
    s.attrs = n->attrs();
    for (const Edge& e : n->inputs()) s.in_slots.push_back(slot_of(e));
    s.out_begin = base;
    s.num_out = static_cast<int32_t>(n->outputs().size());
    s.specs.assign(n->outputs().begin(), n->outputs().end());
    s.static_specs = true;
    // A spec fully known at trace time holds for every call (inputs are
    // checked against the signature); otherwise infer per call.
    for (const TensorSpec& sp : s.specs) s.static_specs &= sp.shape.is_fully_defined();
    const int32_t step_index = static_cast<int32_t>(plan->steps_.size());
    step_of[n] = step_index;
    // Costs for the parallel analysis: element counts, when static.
    StepInfo info;
    for (const Edge& e : n->inputs()) {
      const Edge r = resolve(e);
      info.in_elements.push_back(
          elements_or_unknown(r.node->outputs()[static_cast<size_t>(r.index)].shape));
    }
    for (const TensorSpec& sp : s.specs) info.out_elements.push_back(elements_or_unknown(sp.shape));
    if (!s.specs.empty() && s.specs[0].shape.rank_known())
      info.out_inner =
          s.specs[0].shape.rank() > 0 ? s.specs[0].shape.dim(s.specs[0].shape.rank() - 1) : 1;
    // Must run after: the producers of its inputs, its control inputs, and
    // the previous stateful step (program order of side effects).
    for (const Edge& e : n->inputs()) {
      auto it = step_of.find(resolve(e).node);
      if (it != step_of.end()) info.preds.push_back(it->second);
    }
    for (const Node* ci : n->control_inputs()) {
      auto it = step_of.find(resolve(Edge{const_cast<Node*>(ci), 0}).node);
      if (it != step_of.end()) info.preds.push_back(it->second);
    }
    if (n->op().has(kStateful)) {
      if (last_stateful >= 0) info.preds.push_back(last_stateful);
      last_stateful = step_index;
    }
    plan->info_.push_back(std::move(info));
    for (int32_t slot : s.in_slots)
      if (slot >= 0 && last_use[static_cast<size_t>(slot)] != kForever)
        last_use[static_cast<size_t>(slot)] = step_index;
    plan->steps_.push_back(std::move(s));
  }
  for (size_t i = 0; i < plan->input_slots_.size(); ++i)
    if (plan->input_slots_[i] < 0)
      throw InternalError(
          str_cat("graph '", graph.function_name(), "': input ", i, " was removed from the graph"));

  // The last step reading each caller input (-1: none; outputs never move).
  const size_t n_inputs = graph.inputs().size();
  std::vector<int32_t> input_last(n_inputs, -1);
  for (size_t k = 0; k < plan->steps_.size(); ++k)
    for (int32_t slot : plan->steps_[k].in_slots)
      if (slot < 0 && static_cast<size_t>(-1 - slot) < n_inputs)
        input_last[static_cast<size_t>(-1 - slot)] = static_cast<int32_t>(k);
  for (const Edge& e : graph.outputs()) {
    const int32_t slot = slot_of(e);
    if (slot < 0 && static_cast<size_t>(-1 - slot) < n_inputs)
      input_last[static_cast<size_t>(-1 - slot)] = kForever;
  }

  for (size_t k = 0; k < plan->steps_.size(); ++k) {
    Step& s = plan->steps_[k];
    s.in_last_use.assign(s.in_slots.size(), 0);
    for (size_t i = 0; i < s.in_slots.size(); ++i) {
      const int32_t slot = s.in_slots[i];
      if (slot >= 0 || static_cast<size_t>(-1 - slot) >= n_inputs ||
          input_last[static_cast<size_t>(-1 - slot)] != static_cast<int32_t>(k))
        continue;
      bool later = false;
      for (size_t j = i + 1; j < s.in_slots.size(); ++j) later |= s.in_slots[j] == slot;
      if (!later) s.in_last_use[i] = 2;
    }
    for (size_t i = 0; i < s.in_slots.size(); ++i) {
      const int32_t slot = s.in_slots[i];
      // Constants never move; caller inputs only under run_owned (2 above).
      if (slot < 0 || last_use[static_cast<size_t>(slot)] != static_cast<int32_t>(k)) continue;
      // Move only the last occurrence of a slot within the step.
      bool later = false;
      for (size_t j = i + 1; j < s.in_slots.size(); ++j) later |= s.in_slots[j] == slot;
      if (!later) s.in_last_use[i] = 1;
    }
    // Outputs nobody reads are dropped right after the step.
    for (int32_t o = 0; o < s.num_out; ++o)
      if (last_use[static_cast<size_t>(s.out_begin + o)] < 0) s.release.push_back(s.out_begin + o);
  }
  for (const Edge& e : graph.outputs()) plan->output_slots_.push_back(slot_of(e));
  plan->analyse_memo();

  // Parallel regions now when every cost is known, else after a first run.
  bool known = true;
  for (const StepInfo& i : plan->info_) {
    for (int64_t e : i.in_elements) known &= e >= 0;
    for (int64_t e : i.out_elements) known &= e >= 0;
  }
  if (!known) {
    plan->state_.store(kPending, std::memory_order_relaxed);
  } else {
    plan->regions_ = plan->analyse(plan->info_);
    plan->state_.store(plan->regions_.empty() ? kNone : kReady, std::memory_order_relaxed);
  }
  return plan;
}

// Inline (and so not interposable): these run per step in the hot loop.
inline __attribute__((always_inline)) const Tensor& Plan::read(
    int32_t slot, Slots& slots, std::span<const Tensor> inputs) const {
  if (slot >= 0) return slots[static_cast<size_t>(slot)];
  const size_t e = static_cast<size_t>(-1 - slot);
  return e < inputs.size() ? inputs[e] : constants_[e - inputs.size()].second;
}

// One step: gather arguments (moving those whose last use this is), infer
// shapes when not static, run the kernel, drop dead slots.
inline __attribute__((always_inline)) void Plan::run_step(const Step& s, const uint8_t* moves,
                                                          Slots& slots, Args& args,
                                                          std::span<const Tensor> inputs,
                                                          Tensor* owned) const {
  const size_t n = s.in_slots.size();
  args.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const int32_t slot = s.in_slots[i];
    if (moves[i] == 1)
      args[i] = std::move(slots[static_cast<size_t>(slot)]);
    else if (moves[i] == 2 && owned)
      args[i] = std::move(owned[-1 - slot]);
    else
      args[i] = read(slot, slots, inputs);
  }
  std::span<const Tensor> ins(args.data(), n);
  std::span<Tensor> outs(slots.data() + s.out_begin, static_cast<size_t>(s.num_out));
  const int64_t t0 = profiler::kernel_begin();  // 0 when the profiler is off
  try {
    if (s.static_specs) {
      KernelContext kc(*s.op, ins, s.attrs, s.specs, outs);
      s.op->cpu_kernel(kc);
    } else {
      InferContext ic(*s.op, ins, s.attrs);
      s.op->infer(ic);
      KernelContext kc(*s.op, ins, s.attrs, ic.outputs(), outs);
      s.op->cpu_kernel(kc);
    }
    if (config().check_numerics) check_numerics(*s.op, outs, s.name);
  } catch (const Error& e) {
    throw_error(e.code(), str_cat(e.what(), "\n  (in node '", s.name, "' of function '",
                                  function_name_, "')"));
  }
  profiler::kernel_end(t0, "kernel", s.op->type_name, s.name, outs);
  for (size_t i = 0; i < n; ++i) args[i] = Tensor();
  for (int32_t r : s.release) slots[static_cast<size_t>(r)] = Tensor();
}

inline __attribute__((always_inline)) void Plan::run_one(size_t k, const uint8_t* moves,
                                                         Slots& slots, Args& args,
                                                         std::span<const Tensor> inputs,
                                                         Tensor* owned, MemoRun* mr) const {
  if (!mr) return run_step(steps_[k], moves, slots, args, inputs, owned);
  if (mr->hit && memo_->skip[k]) return;
  run_step(steps_[k], moves, slots, args, inputs, owned);
  if (!mr->hit) memo_record(k, *mr, slots);
}

void Plan::run_region(const Region& r, Slots& slots, std::span<const Tensor> inputs,
                      MemoRun* mr) const {
  profiler::ScopedTrace trace("parallel region", "executor", 2);
  if (trace.active()) {
    trace.add_arg("steps", str_cat(r.begin, "..", r.end - 1));
    trace.add_arg("chains", str_cat(r.chains.size()));
  }
  {
    Args args;
    for (int32_t k : r.pre)
      run_one(k, r.moves[k - r.begin].data(), slots, args, inputs, nullptr, mr);
  }
  // Chains share `slots` (each writes only its own steps' outputs and moves
  // only values no other chain reads); each has its own arguments. Kernels
  // inside a chain run on their thread (nested parallel_for runs inline).
  ThreadPool::global().parallel_for(
      static_cast<int64_t>(r.chains.size()), 1, [&](int64_t b, int64_t e) {
        Args args;
        for (int64_t c = b; c < e; ++c) {
          profiler::ScopedTrace chain([&] { return str_cat("chain ", c); }, "executor", 2);
          for (int32_t k : r.chains[static_cast<size_t>(c)])
            run_one(k, r.moves[k - r.begin].data(), slots, args, inputs, nullptr, mr);
        }
      });
  {
    Args args;
    for (int32_t k : r.post)
      run_one(k, r.moves[k - r.begin].data(), slots, args, inputs, nullptr, mr);
  }
  for (int32_t slot : r.release) slots[static_cast<size_t>(slot)] = Tensor();
}

// The first run of a plan whose costs depend on unknown dims: runs in order,
// records element counts, then publishes the regions for later runs.
void Plan::run_recording(Slots& slots, std::span<const Tensor> inputs) const {
  std::vector<StepInfo> seen = info_;
  struct Reset {  // a failing run leaves the analysis to a later run
    const Plan* p;
    bool done = false;
    ~Reset() {
      if (!done) p->state_.store(kPending, std::memory_order_release);
    }
  } reset{this};
  Args args;
  for (size_t k = 0; k < steps_.size(); ++k) {
    const Step& s = steps_[k];
    StepInfo& info = seen[k];
    for (size_t i = 0; i < s.in_slots.size(); ++i) {
      const Tensor& t = read(s.in_slots[i], slots, inputs);
      info.in_elements[i] = t.defined() ? t.num_elements() : 0;
    }
    run_step(s, s.in_last_use.data(), slots, args, inputs);
    for (int32_t o = 0; o < s.num_out; ++o) {
      const Tensor& t = slots[static_cast<size_t>(s.out_begin + o)];
      info.out_elements[static_cast<size_t>(o)] = t.defined() ? t.num_elements() : 0;
      if (o == 0 && t.defined()) info.out_inner = t.rank() > 0 ? t.dim(t.rank() - 1) : 1;
    }
  }
  regions_ = analyse(seen);
  reset.done = true;
  state_.store(regions_.empty() ? kNone : kReady, std::memory_order_release);
}

std::vector<Tensor> Plan::run(std::span<const Tensor> inputs) const {
  std::vector<Tensor> out;
  run_impl(inputs, nullptr, out);
  return out;
}

void Plan::run_owned(std::span<Tensor> inputs, std::vector<Tensor>& out) const {
  run_impl(inputs, inputs.data(), out);
}

// Steps in parallel regions and a first (recording) run never move inputs.
void Plan::run_impl(std::span<const Tensor> inputs, Tensor* owned, std::vector<Tensor>& out) const {
  if (inputs.size() != input_slots_.size())
    throw InvalidArgumentError(str_cat("function '", function_name_, "' expects ",
                                       input_slots_.size(), " inputs, got ", inputs.size()));
  Slots slots(static_cast<size_t>(num_slots_));
  detail::ScopedFlushDenormals flush;
  profiler::ScopedTrace trace(function_name_, "function", 2);
  const int state = state_.load(std::memory_order_acquire);
  int expected = kPending;
  // Kept values are used by runs in order or by regions (not by a first run
  // that records costs).
  MemoRun memo_run;
  MemoRun* mr = nullptr;
  if ((state == kNone || state == kReady) && memo_begin(memo_run, slots, inputs)) mr = &memo_run;
  if (state == kNone || !config().parallel_branches) {
    Args args;
    for (size_t k = 0; k < steps_.size(); ++k)
      run_one(k, steps_[k].in_last_use.data(), slots, args, inputs, owned, mr);
  } else if (state == kReady) {
    Args args;
    size_t r = 0;
    for (size_t k = 0; k < steps_.size();) {
      if (r < regions_.size() && static_cast<size_t>(regions_[r].begin) == k) {
        run_region(regions_[r], slots, inputs, mr);
        k = static_cast<size_t>(regions_[r++].end);
      } else {
        run_one(k, steps_[k].in_last_use.data(), slots, args, inputs, owned, mr);
        ++k;
      }
    }
  } else if (state == kPending &&
             state_.compare_exchange_strong(expected, kRecording, std::memory_order_acq_rel)) {
    run_recording(slots, inputs);
  } else {  // another thread is recording the first run
    Args args;
    for (const Step& s : steps_) run_step(s, s.in_last_use.data(), slots, args, inputs);
  }
  if (mr) memo_end(*mr);
  out.clear();
  out.reserve(output_slots_.size());
  for (size_t i = 0; i < output_slots_.size(); ++i) {
    const int32_t slot = output_slots_[i];
    // The slots die here: move a value out unless a later output reads it too.
    bool again = slot < 0;
    for (size_t j = i + 1; j < output_slots_.size() && !again; ++j)
      again = output_slots_[j] == slot;
    if (again)
      out.push_back(read(slot, slots, inputs));
    else
      out.push_back(std::move(slots[static_cast<size_t>(slot)]));
  }
}

size_t Plan::num_parallel_regions() const {
  return state_.load(std::memory_order_acquire) == kReady ? regions_.size() : 0;
}

std::string Plan::debug_string() const {
  auto slot_name = [&](int32_t slot) {
    if (slot >= 0) return str_cat("s", slot);
    const size_t e = static_cast<size_t>(-1 - slot);
    return e < input_slots_.size() ? str_cat("in", e) : str_cat("c", e - input_slots_.size());
  };
  std::string s;
  for (size_t k = 0; k < steps_.size(); ++k) {
    const Step& st = steps_[k];
    s += str_cat(k, ": ", st.op->type_name, " ", st.name, " (");
    for (size_t i = 0; i < st.in_slots.size(); ++i)
      s += str_cat(i ? ", " : "", slot_name(st.in_slots[i]), st.in_last_use[i] == 1 ? "*" : "");
    s += ") -> ";
    for (int32_t o = 0; o < st.num_out; ++o) s += str_cat(o ? ", " : "", "s", st.out_begin + o);
    if (!st.static_specs) s += " [infer]";
    s += '\n';
  }
  if (state_.load(std::memory_order_acquire) == kReady) {
    for (const Region& r : regions_) {
      auto list = [&s](const std::vector<int32_t>& v) {
        s += " [";
        for (size_t i = 0; i < v.size(); ++i) s += str_cat(i ? " " : "", v[i]);
        s += ']';
      };
      s += str_cat("region ", r.begin, "..", r.end - 1, ": pre");
      list(r.pre);
      s += " chains";
      for (const auto& c : r.chains) list(c);
      s += " post";
      list(r.post);
      s += '\n';
    }
  }
  return s;
}

}  // namespace kiln
