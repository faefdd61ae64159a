#include "kiln/variable.h"

#include <atomic>
#include <utility>

#include "kiln/ops/state.h"

namespace kiln {
namespace {

std::atomic<int64_t> g_next_variable_id{1};

const Tensor& checked_initial(const Tensor& t) {
  if (!t.defined()) throw InvalidArgumentError("Variable: the initial value is undefined");
  if (t.is_symbolic())
    throw InvalidArgumentError(str_cat(
        "Variable: the initial value must be a concrete tensor, got symbolic ", t.to_string()));
  if (t.dtype() == DType::kResource)
    throw InvalidArgumentError("Variable: the initial value cannot be a resource");
  return t;
}

}  // namespace

VariableResource::VariableResource(std::string name, const Tensor& initial, bool trainable)
    : id_(g_next_variable_id.fetch_add(1, std::memory_order_relaxed)),
      name_(std::move(name)),
      dtype_(checked_initial(initial).dtype()),
      shape_(initial.shape()),
      trainable_(trainable),
      value_(initial) {}

std::string VariableResource::debug_name() const {
  return str_cat("Variable '", name_, "'");
}

Tensor VariableResource::read() const {
  std::lock_guard<std::mutex> lock(mu_);
  return value_;
}

void VariableResource::check_assignable(const char* op, DType dtype, const Shape& shape) const {
  if (dtype != dtype_)
    throw InvalidArgumentError(str_cat(op, ": cannot assign a value of dtype ", dtype_name(dtype),
                                       " to variable '", name_, "' of dtype ", dtype_name(dtype_)));
  if (!shape_.is_compatible_with(shape))
    throw InvalidArgumentError(str_cat(op, ": cannot assign a value of shape ", shape.to_string(),
                                       " to variable '", name_, "' of shape ", shape_.to_string(),
                                       " (shapes must be equal)"));
}

void VariableResource::assign(const char* op, const Tensor& value) {
  check_assignable(op, value.dtype(), value.shape());
  if (value.is_symbolic())
    throw InvalidArgumentError(
        str_cat(op, ": cannot store a symbolic tensor in variable '", name_, "'"));
  std::lock_guard<std::mutex> lock(mu_);
  value_ = value;  // values are immutable: sharing the buffer is safe
}

void VariableResource::update(
    const std::function<Tensor(const Tensor& current, bool exclusive)>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  // Readers only obtain value_ under mu_, so once its handle and buffer are
  // unreferenced elsewhere nobody can observe an in-place write.
  const bool exclusive = value_.impl()->refs.load(std::memory_order_acquire) == 1 &&
                         value_.buffer()->unique() && !is_object(dtype_);
  Tensor next = fn(value_, exclusive);
  if (next.dtype() != dtype_ || next.shape() != shape_)
    throw InternalError(str_cat("update of variable '", name_, "' produced ",
                                dtype_name(next.dtype()), " ", next.shape().to_string()));
  value_ = std::move(next);
}

// ---- Variable ----

namespace {
thread_local VariableCreationHook t_creation_hook;
}  // namespace

VariableCreationScope::VariableCreationScope(VariableCreationHook hook)
    : prev_(std::exchange(t_creation_hook, std::move(hook))) {}
VariableCreationScope::~VariableCreationScope() {
  t_creation_hook = std::move(prev_);
}

Variable::Variable(const Tensor& initial_value, const std::string& name, bool trainable) {
  if (t_creation_hook) t_creation_hook(name);
  handle_ = Tensor::empty(DType::kResource, Shape());
  auto* res = new VariableResource(str_cat(name.empty() ? "Variable" : name, ":0"), initial_value,
                                   trainable);
  // The handle's buffer adopts the creation reference (Buffer unrefs it).
  *static_cast<Resource**>(handle_.mutable_raw_data()) = res;
  resource_ = res;
}

Variable::Variable(Scalar initial_value, const std::string& name, bool trainable)
    : Variable(Tensor(initial_value, initial_value.natural_dtype()), name, trainable) {}

Variable Variable::from_handle(const Tensor& handle) {
  auto* res = handle.defined() && !handle.is_symbolic() && handle.dtype() == DType::kResource
                  ? dynamic_cast<VariableResource*>(handle.resource())
                  : nullptr;
  if (!res) throw InvalidArgumentError("Variable::from_handle: not a variable's resource handle");
  Variable v;
  v.handle_ = handle;
  v.resource_ = res;
  return v;
}

void Variable::check_defined() const {
  if (!resource_)
    throw FailedPreconditionError("Variable: this handle is empty (default-constructed)");
}

int64_t Variable::id() const {
  check_defined();
  return resource_->id();
}
const std::string& Variable::name() const {
  check_defined();
  return resource_->name();
}
DType Variable::dtype() const {
  check_defined();
  return resource_->dtype();
}
const Shape& Variable::shape() const {
  check_defined();
  return resource_->shape();
}
bool Variable::trainable() const {
  check_defined();
  return resource_->trainable();
}
const Tensor& Variable::handle() const {
  check_defined();
  return handle_;
}
VariableResource* Variable::resource() const {
  check_defined();
  return resource_;
}

Tensor Variable::read_value() const {
  check_defined();
  return read_variable(handle_, resource_->dtype(), resource_->shape());
}

Variable& Variable::assign(const Tensor& value) {
  check_defined();
  assign_variable(handle_, value);
  return *this;
}
Variable& Variable::assign(Scalar value) {
  return assign(Tensor(value, dtype()));
}
Variable& Variable::assign_add(const Tensor& delta) {
  check_defined();
  assign_add_variable(handle_, delta);
  return *this;
}
Variable& Variable::assign_add(Scalar delta) {
  return assign_add(Tensor(delta, dtype()));
}
Variable& Variable::assign_sub(const Tensor& delta) {
  check_defined();
  assign_sub_variable(handle_, delta);
  return *this;
}
Variable& Variable::assign_sub(Scalar delta) {
  return assign_sub(Tensor(delta, dtype()));
}

std::string Variable::to_string() const {
  if (!resource_) return "<kiln.Variable (empty)>";
  const std::string v = resource_->read().to_string();
  return str_cat("<kiln.Variable '", resource_->name(), "' shape=", resource_->shape().to_string(),
                 " dtype=", dtype_name(resource_->dtype()),
                 ", numpy=", v.find('\n') != std::string::npos ? "\n" : "", v, ">");
}

std::ostream& operator<<(std::ostream& os, const Variable& v) {
  return os << v.to_string();
}

}  // namespace kiln
