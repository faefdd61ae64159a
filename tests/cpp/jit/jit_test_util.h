// Helpers for the JIT's tests: a private temporary directory and scoped
// environment variables.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "jit/ir/jit_ir.h"
#include "jit/ir/program.h"
#include "kiln/config.h"
#include "kiln/function.h"
#include "kiln/ops.h"
#include "test_util.h"

namespace kiln::jit::testing {

/// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/kiln-jit-test-XXXXXX";
    if (!::mkdtemp(tmpl.data())) ADD_FAILURE() << "mkdtemp failed for " << tmpl;
    path_ = std::filesystem::absolute(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

using kiln::testing::ScopedEnv;

// Every test in this binary shares one cache directory for the run.
inline const TempDir& run_cache() {
  static TempDir* d = [] {
    auto* t = new TempDir;
    ::setenv("KILN_CACHE_DIR", t->path().c_str(), 1);
    return t;
  }();
  return *d;
}

inline Function make(std::function<Value(const std::vector<Value>&)> body, bool jit,
                     std::optional<std::vector<ArgSpec>> sig = std::nullopt) {
  run_cache();
  FunctionOptions o;
  o.name = jit ? "jitted" : "graph";
  o.jit_compile = jit;
  o.input_signature = std::move(sig);
  return Function(std::move(body), o);
}

// Integers and bools bit for bit; floats within 1e-6 relative (FMA
// contraction in generated code moves the last bit or two); complex values
// part by part within 1e-6 of 1 + |b| (a part may cancel: re(a * b) is
// re(a) re(b) - im(a) im(b), contracted into one FMA). `rel` widens the float
// bound where sums of many terms may run in another order (product_rel).
inline void expect_same(const Tensor& a, const Tensor& b, double rel = 1e-6) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  if (is_complex(a.dtype())) {
    const Tensor m = cast(complex_abs(b), DType::kFloat64);
    for (Tensor (*part)(const Tensor&) : {&real, &imag}) {
      const Tensor x = cast(part(a), DType::kFloat64), y = cast(part(b), DType::kFloat64);
      for (int64_t i = 0; i < a.num_elements(); ++i) {
        const double p = x.data<double>()[i], q = y.data<double>()[i];
        if (p == q || (p != p && q != q)) continue;
        ASSERT_LE(std::abs(p - q), 1e-6 * (1 + m.data<double>()[i]))
            << "element " << i << ": " << p << " vs " << q;
      }
    }
    return;
  }
  if (a.dtype() == DType::kFloat32 || a.dtype() == DType::kFloat64) {
    const Tensor x = cast(a, DType::kFloat64), y = cast(b, DType::kFloat64);
    const double* p = x.data<double>();
    const double* q = y.data<double>();
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      if (p[i] == q[i] || (p[i] != p[i] && q[i] != q[i])) continue;  // equal (inf) or both NaN
      ASSERT_LE(std::abs(p[i] - q[i]), rel * (1 + std::abs(q[i])))
          << "element " << i << ": " << p[i] << " vs " << q[i];
    }
    return;
  }
  const size_t bytes = static_cast<size_t>(a.num_elements()) * dtype_size(a.dtype());
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), bytes), 0) << a.to_string() << "\nvs\n"
                                                               << b.to_string();
}

/// expect_same's bound for products of depth `k` (and what follows them):
/// a kernel's blocks of rows and the whole product may sum their k terms in
/// another order (OpenBLAS picks its kernel by the rows it is given), each
/// term up to 9 in random_tensor's range.
inline double product_rel(int64_t k) {
  return 1e-6 * std::max<double>(1, static_cast<double>(k) / 8);
}

inline Tensor random_tensor(DType dt, const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(static_cast<size_t>(s.num_elements()));
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  for (float& x : v) x = u(rng);
  return cast(Tensor::from_vector(v, s), dt);
}

/// Sets Config::jit_excess_precision while alive. The helpers below compare
/// half results bit for bit, so they hold it off (kernels round every op).
struct ScopedExcessPrecision {
  bool old;
  explicit ScopedExcessPrecision(bool on) : old(config().jit_excess_precision) {
    config().jit_excess_precision = on;
  }
  ~ScopedExcessPrecision() { config().jit_excess_precision = old; }
  ScopedExcessPrecision(const ScopedExcessPrecision&) = delete;
  ScopedExcessPrecision& operator=(const ScopedExcessPrecision&) = delete;
};

// Runs `body` eagerly, traced and jit-compiled on `args`; all must agree
// (expect_same), and the jit function must run at least `min_kernels`.
inline void check_all_modes(const std::function<Value(const std::vector<Value>&)>& body,
                            const std::vector<Value>& args, size_t min_kernels = 1) {
  const ScopedExcessPrecision strict(false);
  const Tensor eager = body(args).tensor();
  Function g = make(body, false), j = make(body, true);
  expect_same(g(args).tensor(), eager);
  expect_same(j(args).tensor(), eager);
  EXPECT_GE(j.get_concrete_function(args)->jit_kernels(), min_kernels);
}

/// The tensors of a result: each item of a list, or the one tensor.
inline std::vector<Tensor> tensors_of(const Value& v) {
  std::vector<Tensor> t;
  if (v.kind() == Value::Kind::kList)
    for (const Value& x : v.items()) t.push_back(x.tensor());
  else
    t.push_back(v.tensor());
  return t;
}

/// `body` eagerly, graph-mode `g` and jit `j` agree on every result
/// (expect_same).
inline void expect_modes_agree(const std::function<Value(const std::vector<Value>&)>& body,
                               const std::vector<Value>& args, Function& g, Function& j) {
  const ScopedExcessPrecision strict(false);
  const std::vector<Tensor> eager = tensors_of(body(args));
  const std::vector<Tensor> graph = tensors_of(g(args)), jit = tensors_of(j(args));
  ASSERT_EQ(graph.size(), eager.size());
  ASSERT_EQ(jit.size(), eager.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    SCOPED_TRACE(str_cat("result ", i));
    expect_same(graph[i], eager[i]);
    expect_same(jit[i], eager[i]);
  }
}

/// How many nodes of `f`'s compiled graph for `args` run `op`.
inline size_t nodes_of(Function& f, const std::vector<Value>& args, OpId op) {
  size_t n = 0;
  for (const auto& node : f.get_concrete_function(args)->optimized_graph().nodes())
    n += node->op().id == op;
  return n;
}

/// How many times `key` occurs in `f`'s "hlo" listing for `args`.
inline size_t ir_count(Function& f, const std::vector<Value>& args, const std::string& key) {
  const std::string hlo = f.get_concrete_function(args)->compiler_ir("hlo");
  size_t n = 0;
  for (size_t at = hlo.find(key); at != std::string::npos; at = hlo.find(key, at + 1)) ++n;
  return n;
}

/// A rank-1 kernel over n points with one input of dtype dt and no body yet
/// (tests build small kernels by hand).
inline Kernel one_input_kernel(const std::string& name, DType dt, int64_t n) {
  Kernel k;
  k.name = name;
  k.rank = 1;
  k.dims = {n};
  k.inputs = {dt};
  k.input_dims = {{n}};
  return k;
}

/// One IR instruction (tests build small kernels by hand).
inline Instr instr(Instr::Kind kind, DType dt, int32_t a, OpId op = OpId::kNumOps, int32_t b = -1) {
  Instr in;
  in.kind = kind;
  in.dtype = dt;
  in.op = op;
  in.a = a;
  in.b = b;
  return in;
}

/// A JitKernel node's attributes: its program `p` (tests build programs by
/// hand; they have no code loaded).
inline Attrs program_attrs(Program p) {
  return Attrs{AttrObjectRef(std::make_shared<Program>(std::move(p)))};
}

/// A program over a space of static `dims` whose one input has the space's
/// shape and whose one output is that input (or, with `reduced` trailing dims,
/// their sum per row).
inline Program one_input_program(std::vector<int64_t> dims, DType dt = DType::kFloat32,
                                 int reduced = 0) {
  Program p;
  Kernel& k = p.kernel;
  k.name = "t";
  k.rank = static_cast<int>(dims.size());
  k.reduced = reduced;
  k.dims = dims;
  k.inputs = {dt};
  k.input_dims = {dims};
  k.body = {instr(Instr::kLoad, dt, 0)};
  if (reduced > 0) k.body.push_back(instr(Instr::kReduce, dt, 0, OpId::Add));
  k.outputs = {static_cast<int32_t>(k.body.size() - 1)};
  OutputRule r;
  r.dtype = dt;
  r.form = reduced > 0 ? OutputRule::kRow : OutputRule::kSpace;
  r.deps = {0};
  p.outputs = {r};
  p.pattern = {1};
  if (reduced > 0) {
    p.row_points = 1;
    for (size_t d = dims.size() - static_cast<size_t>(reduced); d < dims.size(); ++d)
      p.row_points *= dims[d];
  }
  return p;
}

/// The program of JitKernel node `n`.
inline const Program& program_of(const Node& n) {
  return *attr_object<Program>(n.op(), n.attrs(), "program");
}

}  // namespace kiln::jit::testing
