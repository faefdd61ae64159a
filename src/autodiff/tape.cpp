// GradientTape: recording through the thread's OpObserver and reverse-mode
// backpropagation over the record (see include/kiln/gradient_tape.h).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "autodiff/autodiff.h"
#include "kiln/context.h"
#include "kiln/gradient_tape.h"
#include "kiln/ops.h"

namespace kiln {

using TensorId = const detail::TensorImpl*;

namespace {
// One recorded op call. `own[j]` marks outputs that are new values (not
// already-tracked handles, as Identity's output eagerly is its input).
struct Entry {
  const OpDef* op;
  std::vector<Tensor> inputs, outputs;
  Attrs attrs;
  std::vector<char> own;
};
}  // namespace

struct GradientTape::Impl {
  bool persistent = false;
  bool watch_accessed_variables = true;
  bool recording = false;  // on the thread's stack and not paused
  bool on_stack = false;
  bool used = false;  // a non-persistent tape computed its gradient
  ExecutionContext* ctx = nullptr;
  std::unordered_set<TensorId> tracked;
  std::vector<Tensor> watched;  // keeps watched ids alive (never reused)
  std::vector<Entry> entries;

  /// Drops everything recorded and watched.
  void forget() {
    tracked.clear();
    watched.clear();
    entries.clear();
  }
  void watch(const Tensor& t) {
    if (!is_floating(t.dtype()) && t.dtype() != DType::kResource) return;
    if (tracked.insert(t.impl()).second) watched.push_back(t);
  }
  void record(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
              std::span<const Tensor> outputs);
  /// Whether record() would keep an op with these inputs that reads the
  /// variables among them (a call): one is tracked or auto-watched.
  bool would_record(std::span<const Tensor> inputs) const;
};

namespace {

// The thread's tapes, oldest first; the thread's OpObserver while non-empty.
class TapeStack final : public OpObserver {
 public:
  std::vector<GradientTape::Impl*> tapes;

  void on_op(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
             std::span<const Tensor> outputs) override {
    if (op.has(kNoGradient)) return;
    for (GradientTape::Impl* t : tapes)
      if (t->recording) t->record(op, inputs, attrs, outputs);
  }
  void push(GradientTape::Impl* t) {
    tapes.push_back(t);
    set_op_observer(this);
  }
  void remove(GradientTape::Impl* t) {
    tapes.erase(std::remove(tapes.begin(), tapes.end(), t), tapes.end());
    if (tapes.empty()) set_op_observer(nullptr);
  }
};

TapeStack& tape_stack() {
  static thread_local TapeStack stack;
  return stack;
}

// Pauses a tape for the duration of its own gradient computation.
class PauseGuard {
 public:
  explicit PauseGuard(GradientTape::Impl& t) : t_(t), was_(t.recording) { t.recording = false; }
  ~PauseGuard() { t_.recording = was_ && t_.on_stack; }

 private:
  GradientTape::Impl& t_;
  bool was_;
};

const VariableResource* variable_of(const Tensor& handle) {
  if (!handle.defined() || handle.is_symbolic() || handle.dtype() != DType::kResource)
    return nullptr;
  return dynamic_cast<const VariableResource*>(handle.resource());
}

// TensorArray handles (resource outputs that are not variables: lists made
// by the TensorList ops, passed through loops, conds and calls) are tracked:
// their gradients are lists (src/ops/tensor_array_ops.cpp). Lists of
// non-float items carry none.
bool tracks_list(const OpDef& op, const Attrs& attrs, std::span<const Tensor> inputs,
                 const Tensor& out) {
  if (!out.defined() || out.dtype() != DType::kResource || variable_of(out)) return false;
  // The items' dtype: the row's element_dtype attr, else (a list made from
  // values only) the first value's; lists passed through (loops, calls) are
  // tracked as they are.
  if (const int k = op.attr_index("element_dtype"); k >= 0)
    return is_floating(std::get<DType>(attrs[static_cast<size_t>(k)]));
  bool from_values = !inputs.empty();
  for (const Tensor& t : inputs) from_values &= t.dtype() != DType::kResource;
  return from_values ? is_floating(inputs[0].dtype()) : true;
}

// Zeros for an output nobody differentiated: a list of zeros for a list.
Tensor zeros_for_output(const Tensor& out) {
  if (out.dtype() == DType::kResource) return call_op1(OpId::TensorListZerosLike, {out});
  return zeros_like(out);
}

Tensor add_gradients(const Tensor& a, const Tensor& b) {
  if (a.dtype() == DType::kResource) return call_op1(OpId::TensorListAdd, {a, b});
  return add(a, b);
}

}  // namespace

void GradientTape::Impl::record(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                                std::span<const Tensor> outputs) {
  if (&current_context() != ctx) return;  // another trace (or eager inside one)
  if (watch_accessed_variables) {
    // Variables read here, or inside a call / cond / loop body they are
    // passed to: trainable ones are watched automatically.
    bool reads = op.id == OpId::ReadVariable;
    for (const AttrDef& a : op.attrs) reads |= a.type == AttrType::kSubgraph;
    for (size_t i = 0; reads && i < inputs.size(); ++i)
      if (inputs[i].defined() && inputs[i].dtype() == DType::kResource &&
          !tracked.count(inputs[i].impl()))
        if (const VariableResource* v = variable_of(inputs[i]); v && v->trainable())
          watch(inputs[i]);
  }
  bool connected = false;
  for (const Tensor& t : inputs) connected |= tracked.count(t.impl()) > 0;
  if (!connected) return;
  Entry e{&op, {inputs.begin(), inputs.end()}, {outputs.begin(), outputs.end()}, attrs, {}};
  bool any = false;
  for (const Tensor& o : outputs) {
    // A value already tracked (an input handed back, or a variable's
    // snapshot returned by a second read) keeps its first producer.
    bool own = o.defined() && (is_floating(o.dtype()) || tracks_list(op, attrs, inputs, o)) &&
               !tracked.count(o.impl());
    for (const Tensor& t : inputs) own &= !t.is_same(o);
    e.own.push_back(own);
    if (own) tracked.insert(o.impl());
    any |= own;
  }
  if (any) entries.push_back(std::move(e));
}

bool GradientTape::Impl::would_record(std::span<const Tensor> inputs) const {
  if (!recording || &current_context() != ctx) return false;
  for (const Tensor& t : inputs) {
    if (tracked.count(t.impl())) return true;
    if (watch_accessed_variables && t.defined() && t.dtype() == DType::kResource)
      if (const VariableResource* v = variable_of(t); v && v->trainable()) return true;
  }
  return false;
}

namespace detail {
bool any_tape_recording() {
  for (const GradientTape::Impl* t : tape_stack().tapes)
    if (t->recording && &current_context() == t->ctx) return true;
  return false;
}
bool tapes_would_record(std::span<const Tensor> inputs) {
  for (const GradientTape::Impl* t : tape_stack().tapes)
    if (t->would_record(inputs)) return true;
  return false;
}
}  // namespace detail

GradientTape::GradientTape(bool persistent, bool watch_accessed_variables)
    : impl_(std::make_unique<Impl>()) {
  impl_->persistent = persistent;
  impl_->watch_accessed_variables = watch_accessed_variables;
  impl_->ctx = &current_context();
  start();
}

GradientTape::~GradientTape() {
  stop();
}

void GradientTape::start() {
  if (impl_->on_stack) return;
  tape_stack().push(impl_.get());
  impl_->on_stack = true;
  impl_->recording = true;
}

void GradientTape::stop() {
  if (!impl_->on_stack) return;
  tape_stack().remove(impl_.get());
  impl_->on_stack = false;
  impl_->recording = false;
}

bool GradientTape::persistent() const {
  return impl_->persistent;
}
bool GradientTape::recording() const {
  return impl_->recording;
}

void GradientTape::reset() {
  impl_->forget();
  impl_->used = false;
}

void GradientTape::watch(const Tensor& t) {
  if (!t.defined()) throw InvalidArgumentError("GradientTape.watch: undefined tensor");
  impl_->watch(t);
}
void GradientTape::watch(const Variable& v) {
  if (!v.defined()) throw InvalidArgumentError("GradientTape.watch: undefined variable");
  if (is_floating(v.dtype())) impl_->watch(v.handle());
}
void GradientTape::watch(const std::vector<GradSource>& sources) {
  for (const GradSource& s : sources) s.is_variable() ? watch(s.variable()) : watch(s.tensor());
}

std::vector<Variable> GradientTape::watched_variables() const {
  std::vector<Variable> out;
  for (const Tensor& t : impl_->watched)
    if (variable_of(t)) out.push_back(Variable::from_handle(t));
  return out;
}

GradientTape::StopRecording::StopRecording(GradientTape* tape)
    : tape_(tape), was_recording_(tape->impl_->recording) {
  tape->impl_->recording = false;
}
GradientTape::StopRecording::StopRecording(StopRecording&& o) noexcept
    : tape_(std::exchange(o.tape_, nullptr)), was_recording_(o.was_recording_) {}
GradientTape::StopRecording::~StopRecording() {
  if (tape_) tape_->impl_->recording = was_recording_ && tape_->impl_->on_stack;
}
GradientTape::StopRecording GradientTape::stop_recording() {
  return StopRecording(this);
}

Tensor GradientTape::gradient(const Tensor& target, const GradSource& source,
                              const Tensor& output_gradient, UnconnectedGradients unconnected) {
  return gradient(std::vector<Tensor>{target}, std::vector<GradSource>{source},
                  std::vector<Tensor>{output_gradient}, unconnected)[0];
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target,
                                           const std::vector<GradSource>& sources,
                                           const Tensor& output_gradient,
                                           UnconnectedGradients unconnected) {
  return gradient(std::vector<Tensor>{target}, sources, std::vector<Tensor>{output_gradient},
                  unconnected);
}

namespace {

void check_arguments(const std::vector<Tensor>& targets, const std::vector<GradSource>& sources,
                     const std::vector<Tensor>& output_gradients) {
  const char* w = "GradientTape.gradient: ";
  for (size_t i = 0; i < targets.size(); ++i) {
    const Tensor& t = targets[i];
    if (!t.defined()) throw InvalidArgumentError(str_cat(w, "target ", i, " is undefined"));
    // A TensorArray handle is a target only with its (list) gradient given.
    const bool list = t.dtype() == DType::kResource && i < output_gradients.size() &&
                      output_gradients[i].defined();
    if (!is_floating(t.dtype()) && !list)
      throw InvalidArgumentError(str_cat(w, "target ", i, " has dtype ", dtype_name(t.dtype()),
                                         "; only float32/float64 targets can be differentiated"));
  }
  if (!output_gradients.empty() && output_gradients.size() != targets.size())
    throw InvalidArgumentError(
        str_cat(w, output_gradients.size(), " output_gradients for ", targets.size(), " targets"));
  for (size_t i = 0; i < output_gradients.size(); ++i) {
    const Tensor& o = output_gradients[i];
    if (!o.defined()) continue;
    const Tensor& t = targets[i];
    if (o.dtype() != t.dtype())
      throw InvalidArgumentError(str_cat(w, "output_gradients[", i, "] has dtype ",
                                         dtype_name(o.dtype()), ", target has ",
                                         dtype_name(t.dtype())));
    if (!o.shape().is_compatible_with(t.shape()))
      throw InvalidArgumentError(str_cat(w, "output_gradients[", i, "] has shape ", o.shape(),
                                         ", target has shape ", t.shape()));
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    const GradSource& s = sources[i];
    if (s.is_variable() ? !s.variable().defined() : !s.tensor().defined())
      throw InvalidArgumentError(str_cat(w, "source ", i, " is undefined"));
  }
}

Tensor zeros_for(const GradSource& s) {
  if (s.is_variable()) return zeros(s.variable().shape(), s.variable().dtype());
  return zeros_like(s.tensor());
}

}  // namespace

std::vector<Tensor> GradientTape::gradient(const std::vector<Tensor>& targets,
                                           const std::vector<GradSource>& sources,
                                           const std::vector<Tensor>& output_gradients,
                                           UnconnectedGradients unconnected) {
  Impl& im = *impl_;
  if (im.used)
    throw FailedPreconditionError(
        "GradientTape.gradient: a non-persistent GradientTape can only be used to compute one "
        "set of gradients; create it with persistent=true to call gradient() again");
  check_arguments(targets, sources, output_gradients);
  if (!im.persistent) {
    im.used = true;
    stop();
  }
  PauseGuard pause(im);

  std::vector<TensorId> source_ids;
  std::unordered_set<TensorId> reach;  // values that depend on a source
  for (const GradSource& s : sources) {
    const Tensor& t = s.is_variable() ? s.variable().handle() : s.tensor();
    source_ids.push_back(t.impl());
    reach.insert(t.impl());
  }
  std::vector<char> live(im.entries.size(), 0);
  for (size_t i = 0; i < im.entries.size(); ++i) {
    const Entry& e = im.entries[i];
    for (const Tensor& t : e.inputs) live[i] |= reach.count(t.impl()) > 0;
    if (!live[i]) continue;
    for (size_t j = 0; j < e.outputs.size(); ++j)
      if (e.own[j]) reach.insert(e.outputs[j].impl());
  }

  std::unordered_map<TensorId, Tensor> grads;
  auto accumulate = [&](TensorId id, const Tensor& g) {
    auto [it, inserted] = grads.try_emplace(id, g);
    if (!inserted) it->second = add_gradients(it->second, g);
  };
  for (size_t k = 0; k < targets.size(); ++k) {
    if (!reach.count(targets[k].impl())) continue;
    const bool given = !output_gradients.empty() && output_gradients[k].defined();
    accumulate(targets[k].impl(), given ? output_gradients[k] : ones_like(targets[k]));
  }

  // Entries were recorded in execution order: walking them backwards sees
  // every consumer of a value before its producer.
  for (size_t i = im.entries.size(); i-- > 0;) {
    if (!live[i]) continue;
    const Entry& e = im.entries[i];
    std::vector<Tensor> gout(e.outputs.size());
    bool any = false;
    for (size_t j = 0; j < e.outputs.size(); ++j) {
      if (!e.own[j]) continue;
      auto it = grads.find(e.outputs[j].impl());
      if (it == grads.end()) continue;
      gout[j] = it->second;
      any = true;
    }
    if (!any) continue;
    if (!e.op->grad)
      throw UnimplementedError(str_cat("GradientTape.gradient: no gradient is defined for op ",
                                       e.op->type_name,
                                       ", which lies between the targets and the sources"));
    for (size_t j = 0; j < e.outputs.size(); ++j)
      if (!gout[j].defined()) gout[j] = zeros_for_output(e.outputs[j]);
    std::vector<Tensor> gin(e.inputs.size());
    e.op->grad(*e.op, e.inputs, e.outputs, gout, e.attrs, gin);
    for (size_t k = 0; k < e.inputs.size() && k < gin.size(); ++k)
      if (gin[k].defined() && reach.count(e.inputs[k].impl()))
        accumulate(e.inputs[k].impl(), gin[k]);
  }

  std::vector<Tensor> result;
  result.reserve(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    auto it = grads.find(source_ids[i]);
    if (it != grads.end())
      result.push_back(it->second);
    else
      result.push_back(unconnected == UnconnectedGradients::kZero ? zeros_for(sources[i])
                                                                  : Tensor());
  }
  if (!im.persistent) im.forget();
  return result;
}

std::vector<Tensor> GradientTape::jacobian(const Tensor& target,
                                           const std::vector<GradSource>& sources,
                                           UnconnectedGradients unconnected) {
  Impl& im = *impl_;
  const char* w = "GradientTape.jacobian: ";
  if (im.used)
    throw FailedPreconditionError(str_cat(w,
                                          "this non-persistent GradientTape already computed "
                                          "its gradients; create it with persistent=true"));
  check_arguments({target}, sources, {});
  if (!target.shape().is_fully_defined())
    throw UnimplementedError(str_cat(w, "the target needs a known shape, got ", target.shape()));
  std::vector<Shape> source_shapes;
  for (const GradSource& s : sources) {
    const Shape sh = s.is_variable() ? s.variable().shape() : s.tensor().shape();
    if (!sh.is_fully_defined())
      throw UnimplementedError(str_cat(w, "a source needs a known shape, got ", sh));
    source_shapes.push_back(sh);
  }
  // One vector-Jacobian product per target element, over one record.
  const bool was_persistent = im.persistent;
  im.persistent = true;
  struct Restore {
    Impl& im;
    bool persistent;
    ~Restore() { im.persistent = persistent; }
  } restore{im, was_persistent};
  const int64_t n = target.shape().num_elements();
  std::vector<std::vector<Tensor>> rows(sources.size());
  std::vector<bool> connected(sources.size(), false);
  for (int64_t i = 0; i < n; ++i) {
    const Tensor e = reshape(one_hot(Tensor(i), n, Scalar(1.0), Scalar(0.0), -1, target.dtype()),
                             target.shape());
    std::vector<Tensor> g = gradient({target}, sources, {e}, UnconnectedGradients::kNone);
    for (size_t k = 0; k < sources.size(); ++k) {
      connected[k] = connected[k] || g[k].defined();
      rows[k].push_back(g[k]);
    }
  }
  std::vector<Tensor> result;
  for (size_t k = 0; k < sources.size(); ++k) {
    std::vector<int64_t> dims(target.shape().dims().begin(), target.shape().dims().end());
    for (int64_t d : source_shapes[k].dims()) dims.push_back(d);
    if (n == 0 || !connected[k]) {  // an empty target's Jacobian is empty, not unconnected
      result.push_back(n == 0 || unconnected == UnconnectedGradients::kZero
                           ? zeros(Shape(dims), sources[k].is_variable()
                                                    ? sources[k].variable().dtype()
                                                    : sources[k].tensor().dtype())
                           : Tensor());
      continue;
    }
    for (Tensor& r : rows[k])
      if (!r.defined()) r = zeros_for(sources[k]);
    result.push_back(reshape(stack(rows[k], 0), Shape(dims)));
  }
  if (!was_persistent) {
    im.used = true;
    stop();
    im.forget();
  }
  return result;
}

}  // namespace kiln
