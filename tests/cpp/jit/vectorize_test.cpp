// jit_compile's promise not to be slower than graph mode rests on vector
// code: every loop the emitter marks "kiln:vector" (stages.h) must be one the
// compiler vectorized. Random programs over every lowered elementwise row
// (each dtype it takes), with broadcasts, row reductions and views, depths 1
// to 64, are traced without a compiler (jit_compile still writes the source),
// their kernels go into one translation unit, and one compile with GCC's
// vectorization report checks every marked loop; the object must hold no
// out-of-line copy of the prelude's functions either.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "jit/build/toolchain.h"
#include "jit_test_util.h"
#include "kiln/context.h"

namespace kiln::jit {
namespace {

using testing::make;
using testing::ScopedEnv;
using testing::TempDir;

constexpr DType kDtypes[] = {DType::kFloat32,   DType::kFloat64,   DType::kInt32,
                             DType::kInt64,     DType::kInt8,      DType::kUInt8,
                             DType::kBool,      DType::kFloat16,   DType::kBFloat16,
                             DType::kComplex64, DType::kComplex128};

// The elementwise rows with a lowering that accept `dt` (their eager call on
// two small tensors succeeds): the ops random programs draw from.
std::vector<const OpDef*> ops_for(DType dt) {
  const Tensor x = cast(Tensor::from_vector(std::vector<float>{1.f, 2.f}, Shape({2})), dt);
  const Tensor c = Tensor::from_vector(std::vector<float>{1.f, 0.f}, Shape({2})) > 0.f;
  std::vector<const OpDef*> ops;
  for (const OpDef& op : op_table()) {
    if (!op.jit_lower || op.has(kGraphOnly) || !op.has(kElementwise) || op.id == OpId::Cast)
      continue;
    try {
      if (op.id == OpId::Select)
        where(c, x, x);
      else if (op.inputs.size() == 3)
        call_op1(op.id, {x, x, x});
      else
        op.inputs.size() == 1 ? call_op1(op.id, {x}) : call_op1(op.id, {x, x});
      ops.push_back(&op);
    } catch (const InvalidArgumentError&) {
    }
  }
  return ops;
}

// One random program: its body, signature and arguments.
struct Program {
  std::function<Value(const std::vector<Value>&)> body;
  std::vector<ArgSpec> sig;
  std::vector<Value> args;
  std::string what;
};

Program random_program(std::mt19937& rng, int index) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const DType dt = kDtypes[index % std::size(kDtypes)];
  const std::vector<const OpDef*> ops = ops_for(dt);
  const int depth = 1 + static_cast<int>(pick(64));
  const int64_t rows[] = {1, 5, 32}, cols[] = {3, 8, 16, 17, 64, 100};
  const int64_t r = rows[pick(3)], c = cols[pick(6)];
  const int view = static_cast<int>(pick(4));  // 0, 1: none; 2: transposed; 3: sliced
  const bool dynamic = pick(3) == 0, reduce = is_floating(dt) && !is_half(dt) && pick(2) == 0;
  const Shape xs = view == 2 ? Shape({c, r}) : view == 3 ? Shape({r, c + 2}) : Shape({r, c});
  const Shape ys = pick(2) ? Shape({c}) : Shape({r, 1});
  std::vector<size_t> steps;
  for (int i = 0; i < depth; ++i) steps.push_back(pick(ops.size()));
  Program p;
  p.what = str_cat(dtype_name(dt), " depth ", depth, " over [", r, ", ", c, "]",
                   view == 2   ? ", transposed"
                   : view == 3 ? ", sliced"
                               : "",
                   dynamic ? ", None dims" : "", reduce ? ", row reductions" : "");
  const uint32_t seed = rng();
  p.body = [=](const std::vector<Value>& a) {
    Tensor v = a[0].tensor();
    const Tensor& y = a[1].tensor();
    const Tensor& cond = a[2].tensor();
    if (view == 2) v = transpose(v, {1, 0});
    if (view == 3) v = slice(v, {0, 1}, {-1, c});
    const Tensor x0 = v;  // x as the program reads it
    std::mt19937 g(seed);
    for (size_t s : steps) {
      const OpDef& op = *ops[s];
      // A value other than v itself: op(v, v) would fold away (v ^ v).
      const Tensor other = g() % 2 ? y : x0;
      Tensor out;
      if (op.id == OpId::Select)
        out = where(cond, v, other);
      else if (op.inputs.size() == 3)
        out = call_op1(op.id, {v, other, y});
      else if (op.inputs.size() == 1)
        out = call_op1(op.id, {v});
      else
        out = g() % 2 ? call_op1(op.id, {v, other}) : call_op1(op.id, {other, v});
      // Comparisons give bools, complex parts their real type: back to dt.
      v = out.dtype() == dt ? out : out.dtype() == DType::kBool ? where(out, v, y) : cast(out, dt);
      if (reduce && g() % 8 == 0)
        v = g() % 2 ? v - reduce_max(v, {-1}, true) : v * reduce_sum(v, {-1}, true);
    }
    return Value(v);
  };
  const int64_t u = -1;
  p.sig = {{dt, dynamic ? Shape({u, xs.dim(1)}) : xs, "x"},
           {dt, ys, "y"},
           {DType::kBool, dynamic ? Shape({u, c}) : Shape({r, c}), "c"}};
  p.args = {Value(testing::random_tensor(dt, xs, seed)),
            Value(testing::random_tensor(dt, ys, seed + 1)),
            Value(testing::random_tensor(DType::kFloat32, Shape({r, c}), seed + 2) > 0.f)};
  return p;
}

// A chain of 48 transcendentals (`f(v * 0.75 + y * 0.25) - 0.1`, y a
// broadcast row): a kernel that calls its costly ops' vector functions
// rather than inlining them (emit_cpp.cpp, "outlined").
Program long_chain(DType dt) {
  Program p;
  p.what = str_cat(dtype_name(dt), " chain of 48 transcendentals over [32, 100]");
  p.body = [](const std::vector<Value>& a) {
    const OpId acts[] = {OpId::Tanh, OpId::Sigmoid, OpId::Exp, OpId::Erf, OpId::Log1p, OpId::Sin};
    Tensor v = a[0].tensor();
    const Tensor& y = a[1].tensor();
    for (int i = 0; i < 48; ++i) v = call_op1(acts[i % 6], {v * 0.75f + y * 0.25f}) - 0.1f;
    return Value(v);
  };
  p.sig = {{dt, Shape({32, 100}), "x"}, {dt, Shape({100}), "y"}};
  p.args = {Value(testing::random_tensor(dt, Shape({32, 100}), 5)),
            Value(testing::random_tensor(dt, Shape({100}), 6))};
  return p;
}

// The compiler's messages about loops, by line: "vectorized", "missed: ..."
// (GCC; clang: "remark: loop not vectorized ...") or "note: ...".
std::map<int, std::vector<std::string>> messages_by_line(const std::string& report) {
  std::map<int, std::vector<std::string>> out;
  const std::regex re(R"(kernel\.cpp:(\d+):\d+: (optimized|missed|remark|note): (.*))");
  for (std::sregex_iterator it(report.begin(), report.end(), re), end; it != end; ++it) {
    const std::string kind = (*it)[2], what = (*it)[3];
    const bool done = what.find("loop vectorized") != std::string::npos ||
                      what.find("vectorized loop") != std::string::npos;
    out[std::stoi((*it)[1])].push_back(done ? "vectorized" : kind + ": " + what);
  }
  return out;
}

// A loop of the unit: its first and last line, text and kernel.
struct Loop {
  int first = 0, last = 0;
  std::string text, kernel;
};

// Every loop marked "kiln:vector", its extent found by matching braces.
std::vector<Loop> vector_loops(const std::vector<std::string>& lines) {
  std::vector<Loop> loops;
  std::string kernel;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("// p", 0) == 0) kernel = lines[i].substr(3, lines[i].find(':') - 3);
    if (lines[i].find("// kiln:vector") == std::string::npos) continue;
    Loop l{static_cast<int>(i) + 1, 0, "", kernel};
    int depth = 0;
    for (size_t j = i; j < lines.size(); ++j) {
      for (char ch : lines[j]) depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
      l.text += lines[j].substr(lines[j].find_first_not_of(' ')) + "\n";
      l.last = static_cast<int>(j) + 1;
      if (depth == 0) break;
    }
    loops.push_back(std::move(l));
  }
  return loops;
}

// What the compiler did with one loop (its lines, and one line past the
// first: GCC reports `omp simd` loops at their first statement): "vector";
// "gone" when nothing is said of it (GCC removed it as dead code first:
// random programs hold identities such as x - x); else what it missed or,
// when only notes speak of the loop, those (a loop in code GCC deems cold
// is never vectorized). A loop turned into a library call (memcpy) counts
// as vector.
std::string fate(const Loop& l, const std::map<int, std::vector<std::string>>& by_line) {
  std::string missed, notes;
  bool any = false, library = false;
  for (auto it = by_line.lower_bound(l.first); it != by_line.end() && it->first <= l.last; ++it)
    for (const std::string& m : it->second) {
      if (m == "vectorized") return "vector";
      any = true;
      if (m.rfind("note: ", 0) == 0) {
        notes += m + "; ";
      } else if (m.find("clobbers memory: __builtin_mem") != std::string::npos ||
                 m.find("library calls") != std::string::npos) {
        library = true;
      } else if (m.rfind("optimized: ", 0) == 0) {
      } else if (m.find("couldn't vectorize") == std::string::npos) {
        missed += m + "; ";
      }
    }
  if (!any) return "gone";
  if (!missed.empty()) return missed;
  return library ? "vector" : "not analyzed by the vectorizer; " + notes;
}

// The defined symbols of shared object `bytes` (nm -C), one per line.
std::string defined_symbols(const std::string& bytes) {
  TempDir dir;
  const std::string path = (dir.path() / "kernel.so").string();
  std::ofstream(path, std::ios::binary) << bytes;
  std::string out;
  if (FILE* f = ::popen(str_cat("nm -C --defined-only ", path, " 2>&1").c_str(), "r")) {
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof(buf), f)) out.append(buf, n);
    ::pclose(f);
  }
  return out;
}

TEST(JitVectorize, EveryLoopMarkedVectorIsVectorizedInRandomPrograms) {
  const std::optional<Toolchain> tc = find_toolchain(nullptr);
  ASSERT_TRUE(tc.has_value()) << "the tests need the C++ compiler setup.sh installs";
  if (tc->version.find("clang") != std::string::npos &&
      tc->version.find("g++") == std::string::npos)
    GTEST_SKIP() << "the report is read from GCC (" << tc->version << ")";
  // Sources only: with no compiler, jit_compile writes the module and runs
  // in graph mode, so the programs cost one compile below, not one each.
  std::vector<std::string> sources, whats;
  {
    ScopedEnv cxx("KILN_CXX", "/nonexistent/kiln-no-compiler");
    reset_toolchain_for_tests();
    // KILN_TEST_SEED draws other programs (a developer's exploration).
    const char* seed = std::getenv("KILN_TEST_SEED");
    std::mt19937 rng(seed ? static_cast<uint32_t>(std::atoi(seed)) : 40u);
    for (int i = 0; i < 38; ++i) {
      Program p =
          i < 36 ? random_program(rng, i) : long_chain(i == 36 ? DType::kFloat32 : DType::kFloat64);
      Function j = make(p.body, true, p.sig);
      std::string src = j.get_concrete_function(p.args)->compiler_ir("source");
      if (src.empty()) continue;  // no kernel (a lone op)
      sources.push_back(std::move(src));
      whats.push_back(p.what);
    }
  }
  reset_toolchain_for_tests();
  ASSERT_GE(sources.size(), 24u);
  // One unit: the first module's head with every module's vector functions
  // (each once), then every module's kernels renamed.
  const std::string mark = "\n// kiln_jit_k";
  std::string unit = sources[0].substr(0, sources[0].find(mark) + 1);
  const std::string simd = "#pragma omp declare simd";
  const size_t functions = unit.find(simd);
  std::set<std::string> declared;
  std::string vector_functions;
  for (const std::string& src : sources)
    for (size_t at = src.find(simd); at != std::string::npos && at < src.find(mark);
         at = src.find(simd, at + 1)) {
      const std::string f = src.substr(at, src.find("\n}\n", at) + 3 - at);
      if (declared.insert(f).second) vector_functions += f;
    }
  unit = (functions == std::string::npos ? unit : unit.substr(0, functions)) + vector_functions;
  // The long chains' kernels call vector functions (their loops are checked below).
  EXPECT_GE(declared.size(), 6u) << "no kernel outlined its costly ops";
  std::map<std::string, std::string> program_of;  // kernel prefix -> program
  for (size_t i = 0; i < sources.size(); ++i) {
    std::string kernels = sources[i].substr(sources[i].find(mark) + 1);
    const std::string prefix = str_cat("p", i, "_k");
    for (size_t at = kernels.find("kiln_jit_k"); at != std::string::npos;
         at = kernels.find("kiln_jit_k", at))
      kernels.replace(at, 10, prefix);
    unit += kernels;
    program_of[prefix] = whats[i];
  }
  std::string report;
  const std::string so = compile_shared_object(*tc, unit, 600, &report);
  if (const char* dump = std::getenv("KILN_TEST_DUMP_DIR")) {  // for a closer look
    std::ofstream(str_cat(dump, "/kernel.cpp")) << unit;
    std::ofstream(str_cat(dump, "/vec.txt")) << report;
  }
  std::vector<std::string> lines;
  std::istringstream in(unit);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const std::map<int, std::vector<std::string>> by_line = messages_by_line(report);
  const std::vector<Loop> loops = vector_loops(lines);
  // Identical loops of one kernel (a stage of the tiled and the plain fast
  // path) may be merged into one, reported at either's lines.
  std::map<std::pair<std::string, std::string>, bool> vectorized;
  for (const Loop& l : loops) vectorized[{l.kernel, l.text}] |= fate(l, by_line) == "vector";
  int gone = 0;
  for (const Loop& l : loops) {
    const std::string f = fate(l, by_line);
    gone += f == "gone";
    if (f == "gone" || vectorized[{l.kernel, l.text}]) continue;
    const std::string prefix = l.kernel.substr(0, l.kernel.find('_') + 2);
    ADD_FAILURE() << "kernel.cpp:" << l.first << " (" << l.kernel << ", " << program_of[prefix]
                  << ") is not vectorized: " << f << "\n"
                  << l.text;
  }
  EXPECT_GE(loops.size(), 150u) << "too few loops marked for vector code";
  EXPECT_LE(gone * 4, static_cast<int>(loops.size())) << "most loops were removed as dead code";
  ::testing::Test::RecordProperty("vector_loops", static_cast<int>(loops.size()));
  ::testing::Test::RecordProperty("removed_as_dead", gone);
  // The entry points are there. (Prelude functions may also be defined out
  // of line: the cold path for unpredicted strides is not `flatten`; a
  // call left in a hot loop shows above as a loop not vectorized.)
  const std::string symbols = defined_symbols(so);
  EXPECT_NE(symbols.find("p0_k0"), std::string::npos) << symbols;
}

}  // namespace
}  // namespace kiln::jit
