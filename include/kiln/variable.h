// Variables: mutable state with a stable identity and a fixed dtype and shape
// (tf.Variable). Reads and writes go through the ReadVariableOp /
// AssignVariableOp / AssignAddVariableOp / AssignSubVariableOp ops, so they
// run eagerly or are recorded while tracing like any other op.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <ostream>
#include <string>

#include "kiln/refcount.h"
#include "kiln/tensor.h"

namespace kiln {

/// The storage behind a Variable, referenced by its resource handle tensor.
/// Thread-safe: reads return snapshots; writes replace the value, or update it
/// in place only when no snapshot shares its buffer.
class VariableResource final : public Resource {
 public:
  /// `initial` must be concrete; its dtype and shape become the variable's.
  VariableResource(std::string name, const Tensor& initial, bool trainable);

  /// Unique for the life of the process, never reused.
  int64_t id() const { return id_; }
  /// TensorFlow-style name with output index, e.g. "v:0".
  const std::string& name() const { return name_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  bool trainable() const { return trainable_; }
  /// "Variable 'v:0'"
  std::string debug_name() const override;

  /// A snapshot of the current value (never changed by later writes).
  Tensor read() const;
  /// Checks that a value of `dtype` / `shape` may be stored; throws
  /// InvalidArgumentError "<op>: ..." naming the variable otherwise.
  void check_assignable(const char* op, DType dtype, const Shape& shape) const;
  /// Replaces the value (checked as above).
  void assign(const char* op, const Tensor& value);
  /// Replaces the value with fn(current) under the lock. fn may write into
  /// `current` when `exclusive` is true (nobody else holds its buffer) and
  /// return it; it must return a value of the variable's dtype and shape.
  void update(const std::function<Tensor(const Tensor& current, bool exclusive)>& fn);

 private:
  const int64_t id_;
  const std::string name_;
  const DType dtype_;
  const Shape shape_;
  const bool trainable_;
  mutable std::mutex mu_;
  Tensor value_;
};

/// A handle to a VariableResource. Copies share the same variable.
class Variable {
 public:
  /// An empty handle (defined() is false).
  Variable() = default;
  /// A new variable holding `initial_value` (a concrete tensor of any dtype
  /// but resource). `name` gets TensorFlow's ":0" suffix.
  explicit Variable(const Tensor& initial_value, const std::string& name = "Variable",
                    bool trainable = true);
  /// A scalar variable of the value's natural dtype (int32, float32, bool...).
  explicit Variable(Scalar initial_value, const std::string& name = "Variable",
                    bool trainable = true);
  /// The variable that `handle` (a concrete resource tensor, as handle()
  /// returns) refers to; InvalidArgument for any other tensor.
  static Variable from_handle(const Tensor& handle);

  bool defined() const { return resource_ != nullptr; }
  int64_t id() const;
  const std::string& name() const;
  DType dtype() const;
  const Shape& shape() const;
  bool trainable() const;
  /// The scalar resource tensor (dtype kResource) that ops take.
  const Tensor& handle() const;
  VariableResource* resource() const;
  /// True when both handles refer to the same variable.
  bool is_same(const Variable& o) const { return resource_ == o.resource_; }

  /// The current value, via ReadVariableOp (a snapshot).
  Tensor read_value() const;
  Tensor value() const { return read_value(); }
  /// Reads the value, so a Variable can be passed where a Tensor is expected.
  operator Tensor() const { return read_value(); }  // NOLINT: implicit by design

  /// Replaces the value (AssignVariableOp); dtype and shape must match.
  Variable& assign(const Tensor& value);
  Variable& assign(Scalar value);
  /// value += delta (AssignAddVariableOp); numeric variables only.
  Variable& assign_add(const Tensor& delta);
  Variable& assign_add(Scalar delta);
  /// value -= delta (AssignSubVariableOp).
  Variable& assign_sub(const Tensor& delta);
  Variable& assign_sub(Scalar delta);

  /// "<kiln.Variable 'v:0' shape=(2,) dtype=int32, numpy=[1 2]>"
  std::string to_string() const;

 private:
  void check_defined() const;

  VariableResource* resource_ = nullptr;  // owned through handle_
  Tensor handle_;
};

std::ostream& operator<<(std::ostream& os, const Variable& v);

/// Called whenever a Variable is created on this thread while set (Function
/// uses it to allow variables on the first trace only); may throw.
using VariableCreationHook = std::function<void(const std::string& name)>;
/// Installs `hook` for this thread until the returned guard is destroyed.
class VariableCreationScope {
 public:
  explicit VariableCreationScope(VariableCreationHook hook);
  ~VariableCreationScope();
  VariableCreationScope(const VariableCreationScope&) = delete;
  VariableCreationScope& operator=(const VariableCreationScope&) = delete;

 private:
  VariableCreationHook prev_;
};

}  // namespace kiln
