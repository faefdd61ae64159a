// CPU kernels for argmax/argmin, cumsum and cumprod. The axis splits the input into
// [A, R, B]; B > 1 is handled by walking whole rows of B (vectorizable).
#include <algorithm>
#include <limits>
#include <type_traits>

#include "bind.h"
#include "functors.h"
#include "kernel_util.h"

namespace kiln::cpu {
namespace {

constexpr int64_t kCols = 1024;

struct Split {
  int64_t A = 1, R = 1, B = 1;
};
Split split_at(const Shape& s, int64_t axis) {
  Split p;
  for (int64_t d = 0; d < s.rank(); ++d) {
    if (d < axis)
      p.A *= s.dim(d);
    else if (d == axis)
      p.R = s.dim(d);
    else
      p.B *= s.dim(d);
  }
  return p;
}

// ---- argmax / argmin ----
// TensorFlow's CPU semantics: NaNs never win (a NaN compares false), ties go
// to the first occurrence, an all-NaN slice gives 0.

template <bool kMax, typename T>
bool better(T x, T best) {
  if constexpr (std::is_floating_point_v<T>)
    return (kMax ? x > best : x < best) || (best != best && x == x);
  else
    return kMax ? x > best : x < best;
}

// First index of the extreme of n >= 1 contiguous elements: the extreme is
// found with a vectorizable NaN-ignoring pass, then its first position.
template <bool kMax, typename T>
int64_t arg_contig(const T* p, int64_t n) {
  T m;
  if constexpr (std::is_floating_point_v<T>)
    m = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  else
    m = kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  constexpr int kLanes = 16;
  T lanes[kLanes];
  for (int j = 0; j < kLanes; ++j) lanes[j] = m;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const T x = p[i + j];
      lanes[j] = (kMax ? x > lanes[j] : x < lanes[j]) ? x : lanes[j];
    }
  for (; i < n; ++i) m = (kMax ? p[i] > m : p[i] < m) ? p[i] : m;
  for (int j = 0; j < kLanes; ++j) m = (kMax ? lanes[j] > m : lanes[j] < m) ? lanes[j] : m;
  for (int64_t k = 0; k < n; ++k)
    if (p[k] == m) return k;
  return 0;  // all NaN
}

template <bool kMax>
void arg_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const int64_t axis = normalize_axis(c.attr_int("axis"), x.rank(), c.op().type_name);
  const Split s = split_at(x.shape(), axis);
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  visit_numeric(x.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    auto run = [&](auto itag) {
      using I = decltype(itag);
      I* o = out.mutable_data<I>();
      if (s.B == 1) {
        parallel_for(s.A, std::max<int64_t>(1, config().parallel_grain / s.R),
                     [&](int64_t a0, int64_t a1) {
                       for (int64_t a = a0; a < a1; ++a)
                         o[a] = static_cast<I>(arg_contig<kMax, T>(in + a * s.R, s.R));
                     });
        return;
      }
      const int64_t nc = (s.B + kCols - 1) / kCols;
      const int64_t per_task = std::min(s.B, kCols) * s.R;
      parallel_for(s.A * nc, std::max<int64_t>(1, config().parallel_grain / per_task),
                   [&](int64_t t0, int64_t t1) {
                     T best[kCols];
                     for (int64_t t = t0; t < t1; ++t) {
                       const int64_t a = t / nc, c0 = (t % nc) * kCols;
                       const int64_t w = std::min(s.B, c0 + kCols) - c0;
                       const T* base = in + a * s.R * s.B + c0;
                       I* idx = o + a * s.B + c0;
                       for (int64_t j = 0; j < w; ++j) {
                         best[j] = base[j];
                         idx[j] = 0;
                       }
                       for (int64_t r = 1; r < s.R; ++r) {
                         const T* row = base + r * s.B;
                         for (int64_t j = 0; j < w; ++j) {
                           const bool b = better<kMax>(row[j], best[j]);
                           best[j] = b ? row[j] : best[j];
                           idx[j] = b ? static_cast<I>(r) : idx[j];
                         }
                       }
                     }
                   });
    };
    if (out.dtype() == DType::kInt32)
      run(int32_t{});
    else
      run(int64_t{});
  });
}

// ---- cumsum / cumprod ----

// A scan with `Op` (fn::Add or fn::Mul: integers wrap, as everywhere in
// kiln) from its identity `kIdentity`.
template <typename Op, int kIdentity>
void scan_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const int64_t axis = normalize_axis(c.attr_int("axis"), x.rank(), c.op().type_name);
  const bool exclusive = c.attr_bool("exclusive"), reverse = c.attr_bool("reverse");
  const Split s = split_at(x.shape(), axis);
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  visit_numeric(x.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* in = x.data<T>();
      T* o = out.mutable_data<T>();
      const int64_t R = s.R, B = s.B;
      // Row r of the scan order maps to row `rev(r)` of the data.
      auto rowi = [&](int64_t r) { return reverse ? R - 1 - r : r; };
      if (B == 1) {
        parallel_for(s.A, std::max<int64_t>(1, config().parallel_grain / R),
                     [&](int64_t a0, int64_t a1) {
                       for (int64_t a = a0; a < a1; ++a) {
                         const T* p = in + a * R;
                         T* q = o + a * R;
                         T acc = T(kIdentity);
                         for (int64_t r = 0; r < R; ++r) {
                           const int64_t k = rowi(r);
                           if (exclusive) {
                             q[k] = acc;
                             acc = Op()(acc, p[k]);
                           } else {
                             acc = Op()(acc, p[k]);
                             q[k] = acc;
                           }
                         }
                       }
                     });
        return;
      }
      const int64_t nc = (B + kCols - 1) / kCols;
      const int64_t per_task = std::min(B, kCols) * R;
      parallel_for(s.A * nc, std::max<int64_t>(1, config().parallel_grain / per_task),
                   [&](int64_t t0, int64_t t1) {
                     for (int64_t t = t0; t < t1; ++t) {
                       const int64_t a = t / nc, c0 = (t % nc) * kCols;
                       const int64_t w = std::min(B, c0 + kCols) - c0;
                       const T* p = in + a * R * B + c0;
                       T* q = o + a * R * B + c0;
                       const T* prev_in = nullptr;
                       T* prev = nullptr;
                       for (int64_t r = 0; r < R; ++r) {
                         const int64_t k = rowi(r);
                         const T* pin = p + k * B;
                         T* cur = q + k * B;
                         if (r == 0) {
                           for (int64_t j = 0; j < w; ++j)
                             cur[j] = exclusive ? T(kIdentity) : pin[j];
                         } else if (exclusive) {
                           for (int64_t j = 0; j < w; ++j) cur[j] = Op()(prev[j], prev_in[j]);
                         } else {
                           for (int64_t j = 0; j < w; ++j) cur[j] = Op()(prev[j], pin[j]);
                         }
                         prev = cur;
                         prev_in = pin;
                       }
                     }
                   });
    }
  });
}

}  // namespace

void bind_scan_kernels(OpTableBuilder& t) {
  t.kernel(OpId::ArgMax, arg_kernel<true>);
  t.kernel(OpId::ArgMin, arg_kernel<false>);
  t.kernel(OpId::Cumsum, scan_kernel<fn::Add, 0>);
  t.kernel(OpId::Cumprod, scan_kernel<fn::Mul, 1>);
}

}  // namespace kiln::cpu
