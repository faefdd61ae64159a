#include "kiln/op.h"

namespace kiln {

const Tensor* InferContext::value(size_t i) const {
  const Tensor& t = inputs_[i];
  return t.is_symbolic() ? t.symbol()->constant_value(t.output_index()) : &t;
}

namespace {
// Input i's value as int64s into `out` (an int64 vector type), if known.
template <typename Out>
bool known_ints(const InferContext& c, size_t i, Out& out) {
  const Tensor* v = c.value(i);
  if (!v) return false;
  const int64_t n = v->num_elements();
  out.resize(static_cast<size_t>(n));
  if (v->dtype() == DType::kInt32)
    std::copy_n(v->data<int32_t>(), n, out.data());
  else if (v->dtype() == DType::kInt64)
    std::copy_n(v->data<int64_t>(), n, out.data());
  else
    c.fail(c.input_name(i), " must be int32 or int64, got ", dtype_name(v->dtype()));
  return true;
}
}  // namespace

bool InferContext::int_values(size_t i, std::vector<int64_t>& out) const {
  return known_ints(*this, i, out);
}

bool InferContext::int_values(size_t i, SmallVec<int64_t, 8>& out) const {
  return known_ints(*this, i, out);
}

void InferContext::set_output(size_t i, DType dtype, Shape shape) {
  if (i >= kInline && heap_.empty()) heap_.assign(inline_, inline_ + kInline);
  if (i >= n_) n_ = i + 1;
  if (!heap_.empty() && heap_.size() < n_) heap_.resize(n_);
  TensorSpec& s = heap_.empty() ? inline_[i] : heap_[i];
  s.dtype = dtype;
  s.shape = std::move(shape);
}

std::string InferContext::input_name(size_t i) const {
  const auto& names = op_.inputs;
  if (op_.has(kVariadicInput) && !names.empty() && i + 1 >= names.size())
    return str_cat(names.back(), "[", i + 1 - names.size(), "]");
  if (i < names.size()) return names[i];
  return str_cat("input ", i);
}

void InferContext::expect_dtype(size_t i, DType want) const {
  if (dtype(i) != want)
    fail("expected ", input_name(i), " to be ", dtype_name(want), ", got ", dtype_name(dtype(i)));
}

void InferContext::expect_same_dtype(size_t i, size_t j) const {
  if (dtype(i) != dtype(j))
    fail("dtype mismatch: ", input_name(i), " is ", dtype_name(dtype(i)), " but ", input_name(j),
         " is ", dtype_name(dtype(j)), " (kiln does not promote dtypes implicitly; use cast)");
}

Tensor& KernelContext::allocate_output(size_t i, int reuse_input) {
  const TensorSpec& spec = specs_[i];
  if (reuse_input >= 0) {
    const Tensor& in = inputs_[static_cast<size_t>(reuse_input)];
    detail::TensorImpl* impl = in.impl();
    if (impl && !in.is_symbolic() && in.dtype() == spec.dtype && impl->refs.load() == 1 &&
        in.buffer()->unique() && in.shape() == spec.shape && !is_object(spec.dtype)) {
      outputs_[i] = Tensor::from_buffer(in.buffer(), in.byte_offset(), spec.dtype, spec.shape);
      return outputs_[i];
    }
  }
  outputs_[i] = Tensor::empty(spec.dtype, spec.shape);
  return outputs_[i];
}

void KernelContext::set_output(size_t i, Tensor t) {
  outputs_[i] = std::move(t);
}

}  // namespace kiln
