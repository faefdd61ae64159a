#include "kiln/tensor.h"

#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

#include "tls.h"

namespace kiln {
namespace detail {
namespace {
// TensorImpl objects are recycled through a per-thread free list.
struct ImplPool {
  std::vector<TensorImpl*> free;
  ~ImplPool() {
    for (auto* p : free) delete p;
  }
};
struct ImplPoolTag {};
using TPool = ThreadCache<ImplPool, ImplPoolTag>;
constexpr size_t kImplPoolMax = 256;
}  // namespace

TensorImpl* TensorImpl::create() {
  ImplPool* pool = TPool::get();
  if (pool && !pool->free.empty()) {
    TensorImpl* t = pool->free.back();
    pool->free.pop_back();
    t->refs.store(1, std::memory_order_relaxed);
    return t;
  }
  return new TensorImpl();
}

void TensorImpl::destroy(TensorImpl* t) {
  if (t->buffer) t->buffer->unref();
  if (t->symbol) t->symbol->unref();
  ImplPool* pool = TPool::get();
  if (!pool || pool->free.size() >= kImplPoolMax) {
    delete t;
    return;
  }
  t->buffer = nullptr;
  t->symbol = nullptr;
  t->offset = 0;
  t->output_index = 0;
  t->numel = -1;
  t->shape = Shape();
  pool->free.push_back(t);
}
}  // namespace detail

DType Scalar::natural_dtype() const {
  switch (kind) {
    case kBool: return DType::kBool;
    case kInt:
      return (i >= std::numeric_limits<int32_t>::min() && i <= std::numeric_limits<int32_t>::max())
                 ? DType::kInt32
                 : DType::kInt64;
    case kFloat: return DType::kFloat32;
  }
  return DType::kInvalid;
}

Tensor Tensor::empty(DType dtype, const Shape& shape) {
  if (!shape.is_fully_defined())
    throw InvalidArgumentError(str_cat("cannot create a tensor of shape ", shape.debug_string(),
                                       ": it is partially known or has negative dims"));
  const int64_t n = shape.num_elements();
  Buffer* b = Buffer::allocate(dtype, n);
  detail::TensorImpl* impl = detail::TensorImpl::create();
  impl->dtype = dtype;
  impl->shape = shape;
  impl->buffer = b;
  impl->numel = n;
  return Tensor(impl);
}

Tensor Tensor::from_buffer(Buffer* buffer, size_t offset, DType dtype, const Shape& shape) {
  buffer->ref();
  detail::TensorImpl* impl = detail::TensorImpl::create();
  impl->dtype = dtype;
  impl->shape = shape;
  impl->buffer = buffer;
  impl->offset = offset;
  impl->numel = shape.num_elements();
  return Tensor(impl);
}

Tensor Tensor::symbolic(Symbol* symbol, int32_t output_index, DType dtype, const Shape& shape) {
  detail::TensorImpl* impl = detail::TensorImpl::create();
  impl->dtype = dtype;
  impl->shape = shape;
  impl->symbol = symbol;
  impl->output_index = output_index;
  impl->numel = shape.num_elements_or_unknown();
  return Tensor(impl);
}

namespace {
template <typename T>
Tensor make_scalar(T v) {
  Tensor t = Tensor::empty(dtype_v<T>, Shape());
  *t.mutable_data<T>() = std::move(v);
  return t;
}
}  // namespace

Tensor::Tensor(bool v) : Tensor(make_scalar<bool>(v)) {}
Tensor::Tensor(int32_t v) : Tensor(make_scalar<int32_t>(v)) {}
Tensor::Tensor(int64_t v) : Tensor(make_scalar<int64_t>(v)) {}
Tensor::Tensor(float v) : Tensor(make_scalar<float>(v)) {}
Tensor::Tensor(double v) : Tensor(make_scalar<double>(v)) {}
Tensor::Tensor(const char* v) : Tensor(make_scalar<std::string>(v)) {}
Tensor::Tensor(std::string v) : Tensor(make_scalar<std::string>(std::move(v))) {}

namespace {
template <typename T>
T checked_convert(const Scalar& s, DType dt) {
  if (s.kind == Scalar::kFloat) {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(s.f);
    } else {
      double r = std::nearbyint(s.f);
      if (r != s.f || !std::isfinite(s.f))
        throw InvalidArgumentError(
            str_cat("cannot convert ", s.f, " to ", dtype_name(dt), " without losing information"));
      if (r < static_cast<double>(std::numeric_limits<T>::lowest()) ||
          r > static_cast<double>(std::numeric_limits<T>::max()))
        throw InvalidArgumentError(str_cat("value ", s.f, " is out of range for ", dtype_name(dt)));
      return static_cast<T>(r);
    }
  }
  if constexpr (std::is_same_v<T, bool>) {
    if (s.kind != Scalar::kBool)
      throw InvalidArgumentError(str_cat("cannot convert the number ", s.i, " to bool"));
    return s.i != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (s.i < static_cast<int64_t>(std::numeric_limits<T>::lowest()) ||
        (s.i > 0 &&
         static_cast<uint64_t>(s.i) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
      throw InvalidArgumentError(str_cat("value ", s.i, " is out of range for ", dtype_name(dt)));
    return static_cast<T>(s.i);
  } else {
    return static_cast<T>(s.i);
  }
}
}  // namespace

Tensor::Tensor(Scalar v, DType dtype) {
  switch (dtype) {
    case DType::kBool: *this = make_scalar<bool>(checked_convert<bool>(v, dtype)); break;
    case DType::kInt8: *this = make_scalar<int8_t>(checked_convert<int8_t>(v, dtype)); break;
    case DType::kUInt8: *this = make_scalar<uint8_t>(checked_convert<uint8_t>(v, dtype)); break;
    case DType::kInt32: *this = make_scalar<int32_t>(checked_convert<int32_t>(v, dtype)); break;
    case DType::kInt64: *this = make_scalar<int64_t>(checked_convert<int64_t>(v, dtype)); break;
    case DType::kFloat32: *this = make_scalar<float>(checked_convert<float>(v, dtype)); break;
    case DType::kFloat64: *this = make_scalar<double>(checked_convert<double>(v, dtype)); break;
    case DType::kFloat16:
      *this = make_scalar<Half>(to_half(checked_convert<float>(v, dtype)));
      break;
    case DType::kBFloat16:
      *this = make_scalar<BFloat16>(to_bfloat16(checked_convert<float>(v, dtype)));
      break;
    case DType::kComplex64:
      *this = make_scalar(std::complex<float>(checked_convert<float>(v, dtype)));
      break;
    case DType::kComplex128:
      *this = make_scalar(std::complex<double>(checked_convert<double>(v, dtype)));
      break;
    default:
      throw InvalidArgumentError(
          str_cat("cannot convert a number to a tensor of dtype ", dtype_name(dtype)));
  }
}

size_t Tensor::nbytes() const {
  return static_cast<size_t>(num_elements()) * dtype_size(dtype());
}

void Tensor::check_access(DType want) const {
  if (!impl_) throw FailedPreconditionError("access to an undefined (null) tensor");
  if (impl_->symbol)
    throw FailedPreconditionError(
        str_cat("tensor ", impl_->symbol->tensor_name(impl_->output_index), " is symbolic (",
                impl_->symbol->describe(), "): its value exists only when the function runs"));
  if (want != DType::kInvalid && want != impl_->dtype)
    throw InvalidArgumentError(
        str_cat("tensor has dtype ", dtype_name(impl_->dtype), ", accessed as ", dtype_name(want)));
}

const void* Tensor::raw_data() const {
  check_access(DType::kInvalid);
  return static_cast<const char*>(impl_->buffer->data()) + impl_->offset;
}
void* Tensor::mutable_raw_data() const {
  check_access(DType::kInvalid);
  impl_->buffer->touch();
  return static_cast<char*>(impl_->buffer->data()) + impl_->offset;
}

Resource* Tensor::resource() const {
  check_access(DType::kResource);
  KILN_CHECK_ARG(num_elements() == 1, "resource tensor must be a scalar");
  return *reinterpret_cast<Resource* const*>(raw_data());
}

Tensor Tensor::view(const Shape& shape) const {
  check_access(DType::kInvalid);
  KILN_CHECK_ARG(shape.is_fully_defined() && shape.num_elements() == num_elements(),
                 "view: cannot view a tensor of shape ", this->shape(), " as ", shape);
  return from_buffer(impl_->buffer, impl_->offset, impl_->dtype, shape);
}

std::string Tensor::to_string() const {
  if (!impl_) return "<undefined tensor>";
  return format_tensor(*this);
}

std::string Tensor::debug_string() const {
  if (!impl_) return "<undefined tensor>";
  if (is_symbolic()) return to_string();
  std::string v = to_string();
  std::string sep = v.find('\n') != std::string::npos ? "\n" : "";
  return str_cat("kiln.Tensor(", sep, v, ", shape=", shape().to_string(),
                 ", dtype=", dtype_name(dtype()), ")");
}

}  // namespace kiln
