// CPU kernels for creation ops: Fill, ZerosLike, OnesLike, Range, Identity.
// The random ops live in random.cpp.
#include <cstring>
#include <string>
#include <type_traits>

#include "bind.h"
#include "copy_util.h"
#include "kernel_util.h"

namespace kiln::cpu {

void bind_random_kernels(OpTableBuilder& t);  // random.cpp

namespace {

template <typename T>
void fill_with(Tensor& out, const T& v) {
  T* p = out.mutable_data<T>();
  const int64_t n = out.num_elements();
  if constexpr (std::is_same_v<T, std::string>) {
    for (int64_t i = 0; i < n; ++i) p[i] = v;
  } else {
    parallel_for(n, 0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = v;
    });
  }
}

void const_kernel(KernelContext& c) {
  c.set_output(0, std::get<Tensor>(c.attr("value")));
}

void fill_kernel(KernelContext& c) {
  const Tensor& value = c.input(1);
  Tensor& out = c.allocate_output(0);
  if (value.dtype() == DType::kString) {
    fill_with<std::string>(out, value.data<std::string>()[0]);
    return;
  }
  // Any fixed-size element (float16/bfloat16 included): copy its bytes.
  visit_elem(value.dtype(), c.op().type_name, [&](auto tag) {
    using E = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<E, std::string>) {  // strings: above
      E v;
      std::memcpy(&v, value.raw_data(), sizeof(E));
      E* p = static_cast<E*>(out.mutable_raw_data());
      parallel_for(out.num_elements(), 0, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) p[i] = v;
      });
    }
  });
}

template <bool kOnes>
void like_kernel(KernelContext& c) {
  const DType dt = c.output_spec(0).dtype;
  Tensor& out = c.allocate_output(0);
  if (dt == DType::kString) return;  // default-constructed: ""
  visit_numeric(dt, c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    fill_with<T>(out, static_cast<T>(kOnes ? 1 : 0));
  });
}

template <typename T>
void range_fill(const Tensor& start_t, const Tensor& delta_t, Tensor& out) {
  const T start = start_t.data<T>()[0], delta = delta_t.data<T>()[0];
  T* p = out.mutable_data<T>();
  parallel_for(out.num_elements(), 0, [&](int64_t b, int64_t e) {
    if constexpr (std::is_floating_point_v<T>) {
      for (int64_t i = b; i < e; ++i) p[i] = start + static_cast<T>(i) * delta;
    } else {
      // Wrapping unsigned math: every result lies between start and limit.
      const uint64_t s = static_cast<uint64_t>(start), d = static_cast<uint64_t>(delta);
      for (int64_t i = b; i < e; ++i) p[i] = static_cast<T>(s + static_cast<uint64_t>(i) * d);
    }
  });
}

void range_kernel(KernelContext& c) {
  Tensor& out = c.allocate_output(0);
  switch (out.dtype()) {
    case DType::kInt32: range_fill<int32_t>(c.input(0), c.input(2), out); break;
    case DType::kInt64: range_fill<int64_t>(c.input(0), c.input(2), out); break;
    case DType::kFloat32: range_fill<float>(c.input(0), c.input(2), out); break;
    case DType::kFloat64: range_fill<double>(c.input(0), c.input(2), out); break;
    default:
      throw InternalError(
          str_cat(c.op().type_name, ": unexpected dtype ", dtype_name(out.dtype())));
  }
}

void identity_kernel(KernelContext& c) {
  c.set_output(0, c.input(0));
}

// StopGradient is a view with a new handle on the same buffer, so a gradient
// tape never takes its output for the (tracked) input.
void stop_gradient_kernel(KernelContext& c) {
  c.set_output(0, c.input(0).view(c.input(0).shape()));
}

}  // namespace

void bind_creation_kernels(OpTableBuilder& t) {
  t.kernel(OpId::Const, const_kernel);
  t.kernel(OpId::Fill, fill_kernel);
  t.kernel(OpId::ZerosLike, like_kernel<false>);
  t.kernel(OpId::OnesLike, like_kernel<true>);
  t.kernel(OpId::Range, range_kernel);
  t.kernel(OpId::Identity, identity_kernel);
  t.kernel(OpId::StopGradient, stop_gradient_kernel);
  bind_random_kernels(t);
}

}  // namespace kiln::cpu
