#include "runtime.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "kiln/small_vector.h"
#include "kiln/thread_pool.h"
#include "layout.h"
#include "ops/jit_ir.h"

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
void extract(const char* full, std::span<const int64_t> dims, const Shape& out_shape, char* dst,
             size_t elem) {
  const size_t rank = dims.size();
  const size_t off = rank - static_cast<size_t>(out_shape.rank());
  int64_t stride[kMaxDims], idx[kMaxDims] = {};
  int64_t s = 1;
  for (size_t d = rank; d-- > 0;) {
    const int64_t od = d >= off ? out_shape.dim(static_cast<int>(d - off)) : 1;
    stride[d] = od == 1 && dims[d] != 1 ? -1 : s;  // -1: this output is broadcast here
    s *= dims[d];
  }
  const int64_t n = out_shape.num_elements();
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

// The last kernels this thread looked up, by their key attribute (compared
// by value, so a plan freed and another built at the same address is safe).
KernelFn lookup(const std::string& key) {
  struct Entry {
    std::string key;
    KernelFn fn = nullptr;
  };
  thread_local Entry recent[4];
  thread_local unsigned next = 0;
  for (const Entry& e : recent)
    if (e.fn && e.key == key) return e.fn;
  const KernelFn fn = find_kernel(key);
  if (fn) recent[next++ % 4] = {key, fn};
  return fn;
}

// The kernel's output buffers. An output smaller than what the kernel
// writes (its inputs broadcast over fewer dims at run time) gets a full-size
// temporary -- the space, or one value per row -- copied out afterwards.
struct Outputs {
  SmallVec<void*, 8> ptrs;
  std::vector<Tensor> full;  // only for smaller outputs (rare)
  std::vector<std::vector<int64_t>> full_dims, keep_dims;

  Outputs(KernelContext& c, std::span<const int64_t> dims, int reduced, int64_t total, int64_t rows)
      : ptrs(c.num_outputs()) {
    const size_t rank = dims.size(), n_out = c.num_outputs();
    for (size_t o = 0; o < n_out; ++o) {
      Tensor& t = c.allocate_output(o);
      if (t.num_elements() == total || (reduced > 0 && t.num_elements() == rows)) {
        ptrs[o] = t.mutable_raw_data();
        continue;
      }
      // A per-row output has its reduced dims 1 or dropped (keepdims).
      const Shape& s = t.shape();
      bool row = reduced > 0 && static_cast<size_t>(s.rank()) < rank;
      if (reduced > 0 && !row) {
        row = true;
        for (int d = s.rank() - reduced; d < s.rank(); ++d) row &= d >= 0 && s.dim(d) == 1;
      }
      std::vector<int64_t> fd(dims.begin(), dims.end()), kd(s.dims().begin(), s.dims().end());
      if (row) {
        std::fill(fd.end() - reduced, fd.end(), 1);
        if (kd.size() < rank) kd.resize(kd.size() + static_cast<size_t>(reduced), 1);
      }
      full.resize(n_out);
      full_dims.resize(n_out);
      keep_dims.resize(n_out);
      full[o] = Tensor::empty(t.dtype(), Shape(fd));
      ptrs[o] = full[o].mutable_raw_data();
      full_dims[o] = std::move(fd);
      keep_dims[o] = std::move(kd);
    }
  }

  void finish(KernelContext& c) {
    for (size_t o = 0; o < full.size(); ++o)
      if (full[o].defined()) {
        Tensor& t = c.output(o);
        extract(static_cast<const char*>(full[o].raw_data()), full_dims[o], Shape(keep_dims[o]),
                static_cast<char*>(t.mutable_raw_data()), dtype_size(t.dtype()));
      }
  }
};

constexpr size_t kStreamBytes = 8 << 20;

// Splits rows [0, rows) x cols over the pool above one grain (columns when
// there is one row and the kernel allows it).
void split(KernelFn fn, const KernelArgs& args, int64_t rows, int64_t cols, bool by_cols) {
  const int64_t total = rows * cols, grain = default_parallel_grain();
  if (total <= grain || (rows == 1 && !by_cols)) {
    fn(&args, 0, rows, 0, cols);
  } else if (rows == 1) {
    parallel_for(cols, grain, [&](int64_t b, int64_t e) { fn(&args, 0, 1, b, e); });
  } else {
    parallel_for(rows, std::max<int64_t>(1, grain / std::max<int64_t>(cols, 1)),
                 [&](int64_t b, int64_t e) { fn(&args, b, e, 0, cols); });
  }
}

void jit_kernel(KernelContext& c) {
  const auto& sig = c.attr_ints("signature");
  const size_t rank = static_cast<size_t>(sig[0]), n_in = c.num_inputs();
  const int reduced = static_cast<int>(sig[1]);
  if (rank > static_cast<size_t>(kMaxDims)) c.fail("rank ", rank, " is over ", kMaxDims);
  // The iteration space: the inputs broadcast together.
  int64_t dims[kMaxDims];
  std::fill_n(dims, rank, 1);
  SmallVec<int64_t, 8 * kMaxDims> in_dims(n_in * rank);
  // Inputs read through a view: its dims and strides, and their first value.
  ViewRefs views;
  const auto& maps = c.attr_ints("maps");
  if (!maps.empty() && !parse_input_maps(maps, n_in, views)) c.fail("maps is malformed");
  SmallVec<int64_t, 8 * kMaxDims> in_strides(maps.empty() ? 0 : n_in * rank);
  SmallVec<int64_t, 8> offset(n_in, 0);
  for (size_t k = 0; k < n_in; ++k) {
    const Shape& s = c.input(k).shape();
    int64_t* d = in_dims.data() + k * rank;
    const ViewRef v = maps.empty() ? ViewRef{} : views[k];
    const size_t r = v.mapped() ? static_cast<size_t>(v.rank) : static_cast<size_t>(s.rank());
    if (r > rank) c.fail("input ", k, " has rank ", r, ", over the kernel's ", rank);
    const size_t off = rank - r;
    std::fill_n(d, off, 1);
    if (v.mapped()) {
      if (const std::string why = view_dims(v, s, d + off); !why.empty())
        c.fail("input ", k, ": ", why);
    } else {
      for (size_t j = 0; j < r; ++j) d[off + j] = s.dim(static_cast<int>(j));
    }
    if (!maps.empty()) {
      int64_t* st = in_strides.data() + k * rank;
      std::fill_n(st, off, 0);
      if (v.mapped())
        offset[k] = view_strides(v, s, st + off);
      else
        contiguous_strides(d + off, r, st + off);
    }
    for (size_t j = 0; j < rank; ++j) {
      if (d[j] == 1 || d[j] == dims[j]) continue;
      if (dims[j] != 1) c.fail("Incompatible shapes in fused kernel: input ", k, " has ", s);
      dims[j] = d[j];
    }
  }
  int64_t total = 1;
  for (size_t d = 0; d < rank; ++d) total *= dims[d];
  Layout l;
  if (reduced > 0) {
    SmallVec<int64_t, 16 * (kMaxDims + 1)> scratch(2 * n_in * (kMaxDims + 1));
    if (!collapse_rows(std::span<const int64_t>(dims, rank), reduced, n_in, in_dims.data(),
                       scratch.data(), l, maps.empty() ? nullptr : in_strides.data()))
      c.fail("an input's view does not read whole rows of its source");
    if (l.cols() != sig[2]) c.fail("reduced dims hold ", l.cols(), " values, not ", sig[2]);
  } else {
    collapse(std::span<const int64_t>(dims, rank), n_in, in_dims.data(), l, false,
             maps.empty() ? nullptr : in_strides.data());
  }
  const int64_t rows = l.rows();
  Outputs outs(c, std::span<const int64_t>(dims, rank), reduced, total, rows);
  if (rows == 0 || (reduced == 0 && total == 0)) return;
  bool fast = true;
  const size_t pat = sig.size() - n_in;  // the kernel's pattern ends the signature
  for (size_t k = 0; k < n_in; ++k) fast &= sig[pat + k] == l.inner(k);
  if (reduced > 0 && !fast) c.fail("inputs do not have the layout the kernel was built for");
  SmallVec<const void*, 16> in(n_in);
  for (size_t k = 0; k < n_in; ++k)
    in[k] = static_cast<const char*>(c.input(k).raw_data()) +
            offset[k] * static_cast<int64_t>(dtype_size(c.input(k).dtype()));
  // Row kernels stream outputs too large to stay in cache (no read for
  // ownership of each line).
  size_t out_bytes = 0;
  for (size_t o = 0; o < c.num_outputs(); ++o) out_bytes += c.output(o).nbytes();
  const bool stream = reduced > 0 && out_bytes >= kStreamBytes;
  const std::string& key = c.attr_string("kernel");
  const KernelFn fn = lookup(key);
  if (!fn) c.fail("kernel '", key, "' is not loaded in this process");
  const KernelArgs args{in.data(), outs.ptrs.data(), l.rank, l.shape, l.strides.data(), fast,
                        stream};
  split(fn, args, rows, l.cols(), reduced == 0);
  outs.finish(c);
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
