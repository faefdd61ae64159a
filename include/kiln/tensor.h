// Tensor: a cheap handle to an immutable value, or to a symbolic value (the
// output of a graph node while a function is traced).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kiln/buffer.h"
#include "kiln/dtype.h"
#include "kiln/refcount.h"
#include "kiln/shape.h"
#include "kiln/status.h"

namespace kiln {

class Tensor;

/// A stateful object referenced by resource tensors (a Variable's storage, and
/// later TensorArrays, iterators...). Identity is the object itself.
class Resource : public RefCounted {
 public:
  /// Human-readable kind and name, e.g. "Variable 'v:0'".
  virtual std::string debug_name() const = 0;
};

/// What a symbolic tensor points at: a node output in a graph under
/// construction. The graph layer derives from this.
class Symbol : public RefCounted {
 public:
  /// The tensor name of output `index`, e.g. "add:0".
  virtual std::string tensor_name(int32_t index) const = 0;
  /// e.g. "node 'add' in function 'f'", used in error messages.
  virtual std::string describe() const = 0;
  /// The value of output `index` when it is a known constant, else nullptr
  /// (lets inference see constants recorded in a graph).
  virtual const Tensor* constant_value(int32_t /*index*/) const { return nullptr; }
};

namespace detail {
struct TensorImpl {
  std::atomic<int32_t> refs{1};
  DType dtype = DType::kInvalid;
  Shape shape;
  Buffer* buffer = nullptr;  // concrete values
  size_t offset = 0;         // byte offset into buffer
  Symbol* symbol = nullptr;  // symbolic values (owned reference)
  int32_t output_index = 0;
  int64_t numel = -1;  // element count; -1 when the shape is not fully known

  void ref() { refs.fetch_add(1, std::memory_order_relaxed); }
  void unref() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy(this);
  }
  static TensorImpl* create();  // pooled
  static void destroy(TensorImpl* t);
};

template <typename T>
struct cxx_elem {
  using type = T;
};
template <>
struct cxx_elem<int> {
  using type = int32_t;
};
template <>
struct cxx_elem<long long> {
  using type = int64_t;
};
template <>
struct cxx_elem<const char*> {
  using type = std::string;
};
template <typename T>
using cxx_elem_t = typename cxx_elem<std::remove_cv_t<T>>::type;
}  // namespace detail

/// A C++ scalar on its way to becoming a tensor. Binary ops convert it to the
/// other operand's dtype (as TensorFlow converts Python numbers).
struct Scalar {
  enum Kind { kBool, kInt, kFloat } kind;
  int64_t i = 0;
  double f = 0;
  template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Scalar(T v) {  // NOLINT: implicit by design
    if constexpr (std::is_same_v<T, bool>) {
      kind = kBool;
      i = v;
    } else if constexpr (std::is_integral_v<T>) {
      kind = kInt;
      i = static_cast<int64_t>(v);
    } else {
      kind = kFloat;
      f = static_cast<double>(v);
    }
  }
  /// The dtype TensorFlow would give this literal on its own in C++ terms:
  /// bool, int32 (int64 if it does not fit), float32.
  DType natural_dtype() const;
};

class Tensor {
 public:
  /// An undefined (null) tensor.
  Tensor() = default;

  /// Scalars: bool, int32, int64, float32, float64, string.
  explicit Tensor(bool v);
  explicit Tensor(int32_t v);
  explicit Tensor(int64_t v);
  explicit Tensor(float v);
  explicit Tensor(double v);
  explicit Tensor(const char* v);
  explicit Tensor(std::string v);
  /// A scalar of the given dtype holding `v` (checked to be representable).
  Tensor(Scalar v, DType dtype);

  /// Nested initializer lists: Tensor({{1, 2}, {3, 4}}) is an int32 2x2.
  /// int -> int32, int64_t -> int64, float -> float32, double -> float64,
  /// bool -> bool, const char* / std::string -> string. Ragged lists throw.
  template <typename T>
  Tensor(std::initializer_list<T> v) {
    init_nested<T, 1>(v);
  }
  template <typename T>
  Tensor(std::initializer_list<std::initializer_list<T>> v) {
    init_nested<T, 2>(v);
  }
  template <typename T>
  Tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> v) {
    init_nested<T, 3>(v);
  }
  template <typename T>
  Tensor(
      std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>>
          v) {
    init_nested<T, 4>(v);
  }

  /// Copies `values` into a new tensor of `shape` (sizes must agree).
  template <typename T>
  static Tensor from_span(std::span<const T> values, const Shape& shape);
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
    return from_span<T>(std::span<const T>(values.data(), values.size()), shape);
  }
  /// An uninitialized concrete tensor (object dtypes default-constructed).
  static Tensor empty(DType dtype, const Shape& shape);
  /// A concrete tensor viewing `buffer` at byte `offset` (takes a reference).
  static Tensor from_buffer(Buffer* buffer, size_t offset, DType dtype, const Shape& shape);
  /// A symbolic tensor (graph layer use): adopts one reference to `symbol`.
  static Tensor symbolic(Symbol* symbol, int32_t output_index, DType dtype, const Shape& shape);

  Tensor(const Tensor& o) : impl_(o.impl_) {
    if (impl_) impl_->ref();
  }
  Tensor(Tensor&& o) noexcept : impl_(std::exchange(o.impl_, nullptr)) {}
  Tensor& operator=(const Tensor& o) {
    Tensor(o).swap(*this);
    return *this;
  }
  Tensor& operator=(Tensor&& o) noexcept {
    Tensor(std::move(o)).swap(*this);
    return *this;
  }
  ~Tensor() {
    if (impl_) impl_->unref();
  }
  void swap(Tensor& o) noexcept { std::swap(impl_, o.impl_); }

  bool defined() const { return impl_ != nullptr; }
  DType dtype() const { return impl_->dtype; }
  const Shape& shape() const { return impl_->shape; }
  int64_t rank() const { return impl_->shape.rank(); }
  int64_t dim(int64_t i) const { return impl_->shape.dim(i); }
  /// Element count; throws for a symbolic tensor with unknown dims.
  int64_t num_elements() const {
    return impl_->numel >= 0 ? impl_->numel : impl_->shape.num_elements();
  }
  bool is_symbolic() const { return impl_ && impl_->symbol != nullptr; }
  Symbol* symbol() const { return impl_->symbol; }
  int32_t output_index() const { return impl_->output_index; }
  Buffer* buffer() const { return impl_->buffer; }
  size_t byte_offset() const { return impl_->offset; }
  size_t nbytes() const;

  /// Raw element pointer; throws FailedPreconditionError when symbolic.
  const void* raw_data() const;
  /// Mutable pointer, for kernels filling a freshly allocated output only (or
  /// writing in place); gives the buffer a new version().
  void* mutable_raw_data() const;
  /// Typed element pointer; checks dtype and that the value is concrete.
  template <typename T>
  const T* data() const {
    check_access(dtype_v<T>);
    return reinterpret_cast<const T*>(static_cast<const char*>(impl_->buffer->data()) +
                                      impl_->offset);
  }
  template <typename T>
  T* mutable_data() const {
    check_access(dtype_v<T>);
    impl_->buffer->touch();
    return reinterpret_cast<T*>(static_cast<char*>(impl_->buffer->data()) + impl_->offset);
  }
  /// Element at a multi-index (checked).
  template <typename T>
  T at(std::initializer_list<int64_t> index) const;
  /// The single element of a one-element tensor.
  template <typename T>
  T item() const;
  /// Copies the elements out.
  template <typename T>
  std::vector<T> to_vector() const {
    const T* p = data<T>();
    return std::vector<T>(p, p + num_elements());
  }
  /// Resource handle of a scalar resource tensor.
  Resource* resource() const;

  /// Same data, new shape, no copy (the element counts must agree).
  Tensor view(const Shape& shape) const;

  /// TensorFlow's value formatting: "[[1 2]\n [3 4]]", floats with up to 9
  /// significant digits, strings as b'..', long tensors summarized with "...".
  /// A symbolic tensor formats as Tensor("name:0", shape=(None,), dtype=int32).
  std::string to_string() const;
  /// "tf.Tensor(...)"-style: "kiln.Tensor([1 2], shape=(2,), dtype=int32)".
  std::string debug_string() const;

  /// Identity of the underlying handle (same object), not value equality.
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  detail::TensorImpl* impl() const { return impl_; }

 private:
  explicit Tensor(detail::TensorImpl* adopt) : impl_(adopt) {}
  void check_access(DType want) const;
  template <typename T, size_t D, typename L>
  void init_nested(const L& list);
  template <typename E, size_t D, typename L>
  static void flatten(const L& list, size_t level, std::vector<int64_t>& dims, std::vector<E>& out);

  detail::TensorImpl* impl_ = nullptr;
};

/// Formatting options for Tensor::to_string.
struct PrintOptions {
  /// Elements shown at each end of an axis longer than 2 * summarize (as
  /// tf.print's `summarize`); -1 shows everything.
  int64_t summarize = 3;
  /// Strings as TensorFlow's print_v2 writes them (tf.strings.format): in
  /// double quotes with C escapes ("a\n"), bytes >= 0x80 as they are. Off:
  /// Python's bytes repr (b'a\n').
  bool quote_strings = false;
};
std::string format_tensor(const Tensor& t, const PrintOptions& opts = {});

// ---- implementation of templates ----

template <typename T>
Tensor Tensor::from_span(std::span<const T> values, const Shape& shape) {
  Tensor t = empty(dtype_v<T>, shape);
  KILN_CHECK_ARG(static_cast<int64_t>(values.size()) == t.num_elements(),
                 "from_span: ", values.size(), " values for shape ", shape.debug_string());
  T* p = t.mutable_data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}

template <typename E, size_t D, typename L>
void Tensor::flatten(const L& list, size_t level, std::vector<int64_t>& dims, std::vector<E>& out) {
  const int64_t n = static_cast<int64_t>(list.size());
  if (dims.size() <= level)
    dims.push_back(n);
  else
    KILN_CHECK_ARG(dims[level] == n, "Tensor: ragged nested list (dimension ", level,
                   " has lengths ", dims[level], " and ", n, ")");
  if constexpr (D == 1) {
    for (const auto& v : list) out.push_back(E(v));
  } else {
    for (const auto& sub : list) flatten<E, D - 1>(sub, level + 1, dims, out);
    if (n == 0)
      for (size_t k = 1; k < D; ++k) dims.push_back(0);
  }
}

template <typename T, size_t D, typename L>
void Tensor::init_nested(const L& list) {
  using E = detail::cxx_elem_t<T>;
  std::vector<int64_t> dims;
  std::vector<E> flat;
  flatten<E, D>(list, 0, dims, flat);
  Tensor t = empty(dtype_v<E>, Shape(dims));
  E* p = t.mutable_data<E>();
  for (size_t i = 0; i < flat.size(); ++i) p[i] = flat[i];
  *this = std::move(t);
}

template <typename T>
T Tensor::item() const {
  KILN_CHECK_ARG(num_elements() == 1, "item(): tensor has ", num_elements(),
                 " elements, expected 1 (shape ", shape().debug_string(), ")");
  return data<T>()[0];
}

template <typename T>
T Tensor::at(std::initializer_list<int64_t> index) const {
  KILN_CHECK_ARG(static_cast<int64_t>(index.size()) == rank(), "at(): index has ", index.size(),
                 " coordinates for a tensor of rank ", rank());
  int64_t flat = 0, k = 0;
  for (int64_t i : index) {
    int64_t d = dim(k);
    if (i < 0 || i >= d)
      throw OutOfRangeError(
          str_cat("at(): index ", i, " out of range [0, ", d, ") in dimension ", k));
    flat = flat * d + i;
    ++k;
  }
  return data<T>()[flat];
}

}  // namespace kiln
