#include "runtime.h"

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "kiln/small_vector.h"
#include "kiln/thread_pool.h"
#include "layout.h"

namespace kiln::jit {
namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<std::string, KernelFn> kernels;
  std::vector<std::shared_ptr<LoadedModule>> modules;
};
Registry& registry() {
  static Registry* r = new Registry;  // outlives every static graph
  return *r;
}

// Copies the values of an output smaller than the iteration space (its
// inputs broadcast over fewer dims) out of a full-size result.
void extract(const char* full, const std::vector<int64_t>& dims, const Shape& out_shape, char* dst,
             size_t elem) {
  const size_t rank = dims.size();
  const size_t off = rank - static_cast<size_t>(out_shape.rank());
  std::vector<int64_t> stride(rank, 0);
  int64_t s = 1;
  for (size_t d = rank; d-- > 0;) {
    const int64_t od = d >= off ? out_shape.dim(static_cast<int>(d - off)) : 1;
    stride[d] = od == 1 && dims[d] != 1 ? -1 : s;  // -1: this output is broadcast here
    s *= dims[d];
  }
  const int64_t n = out_shape.num_elements();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d)
      if (stride[d] > 0) src += idx[d] * stride[d];
    std::memcpy(dst + static_cast<size_t>(i) * elem, full + static_cast<size_t>(src) * elem, elem);
    for (size_t d = rank; d-- > 0;) {
      if (stride[d] < 0) continue;
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

void jit_kernel(KernelContext& c) {
  const std::string& key = c.attr_string("kernel");
  const KernelFn fn = find_kernel(key);
  if (!fn) c.fail("kernel '", key, "' is not loaded in this process");
  const auto& sig = c.attr_ints("signature");
  const size_t rank = static_cast<size_t>(sig[0]), n_in = c.num_inputs();
  // The iteration space: the inputs broadcast together.
  std::vector<int64_t> dims(rank, 1);
  std::vector<std::vector<int64_t>> in_dims(n_in);
  for (size_t k = 0; k < n_in; ++k) {
    const Shape& s = c.input(k).shape();
    auto& d = in_dims[k];
    d.assign(rank - static_cast<size_t>(s.rank()), 1);
    for (int j = 0; j < s.rank(); ++j) d.push_back(s.dim(j));
    for (size_t j = 0; j < rank; ++j) {
      if (d[j] == 1 || d[j] == dims[j]) continue;
      if (dims[j] != 1) c.fail("Incompatible shapes in fused kernel: input ", k, " has ", s);
      dims[j] = d[j];
    }
  }
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  const size_t n_out = c.num_outputs();
  SmallVec<void*, 8> out(n_out);
  std::vector<Tensor> full(n_out);
  for (size_t o = 0; o < n_out; ++o) {
    Tensor& t = c.allocate_output(o);
    if (t.num_elements() == total) {
      out[o] = t.mutable_raw_data();
    } else {
      full[o] = Tensor::empty(t.dtype(), Shape(dims));
      out[o] = full[o].mutable_raw_data();
    }
  }
  if (total == 0) return;
  const Layout l = collapse(dims, in_dims);
  const std::vector<uint8_t> pattern = l.inner_pattern();
  bool fast = true;
  const size_t pat = sig.size() - n_in;  // the kernel's pattern ends the signature
  for (size_t k = 0; k < n_in; ++k) fast &= sig[pat + k] == pattern[k];
  SmallVec<const void*, 16> in(n_in);
  for (size_t k = 0; k < n_in; ++k) in[k] = c.input(k).raw_data();
  const int64_t lrank = static_cast<int64_t>(l.shape.size());
  std::vector<int64_t> strides;
  for (const auto& s : l.strides) strides.insert(strides.end(), s.begin(), s.end());
  const KernelArgs args{in.data(), out.data(), lrank, l.shape.data(), strides.data(), fast};
  const int64_t rows = l.rows(), cols = l.cols(), grain = default_parallel_grain();
  if (total <= grain) {
    fn(&args, 0, rows, 0, cols);
  } else if (rows == 1) {
    parallel_for(cols, grain, [&](int64_t b, int64_t e) { fn(&args, 0, 1, b, e); });
  } else {
    parallel_for(rows, std::max<int64_t>(1, grain / cols),
                 [&](int64_t b, int64_t e) { fn(&args, b, e, 0, cols); });
  }
  for (size_t o = 0; o < n_out; ++o)
    if (full[o].defined()) {
      Tensor& t = c.output(o);
      extract(static_cast<const char*>(full[o].raw_data()), dims, t.shape(),
              static_cast<char*>(t.mutable_raw_data()), dtype_size(t.dtype()));
    }
}

}  // namespace

void register_module(const std::string& module, std::shared_ptr<LoadedModule> so,
                     const std::vector<std::string>& symbols) {
  std::vector<std::pair<std::string, KernelFn>> found;
  for (const std::string& s : symbols)
    found.emplace_back(str_cat(module, "/", s), reinterpret_cast<KernelFn>(so->symbol(s.c_str())));
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& [k, f] : found) r.kernels[k] = f;
  r.modules.push_back(std::move(so));
}

KernelFn find_kernel(const std::string& key) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.kernels.find(key);
  return it == r.kernels.end() ? nullptr : it->second;
}

void bind_jit_kernels(OpTableBuilder& t) {
  t.kernel(OpId::JitKernel, jit_kernel);
}

}  // namespace kiln::jit
