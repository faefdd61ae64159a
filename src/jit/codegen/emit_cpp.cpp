#include "emit_cpp.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <functional>
#include <set>
#include <span>
#include <unordered_map>

#include "jit/codegen/emit_util.h"
#include "jit/codegen/stages.h"
#include "jit/runtime/layout.h"

namespace kiln::jit {
namespace {

// The functor of an op row is fn::<its id> (unary.def, binary.def).
constexpr const char* kIdNames[] = {
#define KILN_OP(id, type_name, node_name) #id,
#include "kiln/op_list.def"
#undef KILN_OP
};

std::string to_hex(uint64_t x) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[x & 15]);
    x >>= 4;
  } while (x);
  return s;
}

}  // namespace

namespace detail {
const char* ctype(DType dt) {
  switch (dt) {
    case DType::kBool: return "bool";
    case DType::kInt8: return "int8_t";
    case DType::kUInt8: return "uint8_t";
    case DType::kInt32: return "int32_t";
    case DType::kInt64: return "int64_t";
    case DType::kFloat32: return "float";
    case DType::kFloat64: return "double";
    case DType::kFloat16:
    case DType::kBFloat16: return "uint16_t";  // the bits; arithmetic is in float32
    case DType::kComplex64: return "__complex__ float";
    case DType::kComplex128: return "__complex__ double";
    default: throw InternalError(str_cat("jit: no C type for ", dtype_name(dt)));
  }
}

const char* mtype(DType dt) {
  return dt == DType::kBool ? "uint8_t" : ctype(dt);
}

std::string v(int32_t x, const char* prefix) {
  return str_cat(prefix, x);
}

std::string literal(DType dt, uint64_t bits) {
  switch (dt) {
    case DType::kBool: return bits ? "true" : "false";
    case DType::kFloat32:
      return str_cat("__builtin_bit_cast(float, 0x", to_hex(bits & 0xffffffffu), "u)");
    case DType::kFloat64: return str_cat("__builtin_bit_cast(double, 0x", to_hex(bits), "ull)");
    default:
      return str_cat("static_cast<", ctype(dt), ">(static_cast<int64_t>(0x", to_hex(bits), "ull))");
  }
}

std::string functor(OpId op) {
  return str_cat("kiln::fn::", kIdNames[static_cast<size_t>(op)], "{}");
}

// In a kernel of many costly float ops (transcendentals), each is one
// function per unit with vector clones (`declare simd`), which the loops
// call, rather than inlined into every loop that computes it. GCC's time on
// one flattened kernel grows faster than its size: a 64-activation chain
// compiled in 9.8 s inlined and 4.0 s outlined. But a call per vector costs
// the loop its spills and overlap (5-13% slower at 12-24 such ops, 2% at
// 64), so shorter kernels keep them inline (docs/BENCHMARKS.md). Row kernels
// always do: a call in a row's loop changes how GCC vectorizes the row's
// sums.
constexpr int kOutlineCost = 8;    // an op at least this costly (fn::cost_of)
constexpr int kOutlineCount = 32;  // in a kernel of at least this many of them

// Whether instruction i of `body` is a costly float op.
bool costly(std::span<const Instr> body, size_t i) {
  const Instr& in = body[i];
  if (in.kind != Instr::kApply || (in.dtype != DType::kFloat32 && in.dtype != DType::kFloat64) ||
      in.arity() > 2)
    return false;
  for (int32_t a : {in.a, in.b})
    if (a >= 0 && body[static_cast<size_t>(a)].dtype != in.dtype) return false;
  return instr_cost(body, i) >= kOutlineCost;
}

// Whether `k` outlines its costly ops.
bool outlines(const Kernel& k) {
  int n = 0;
  for (size_t i = 0; i < k.body.size() && n < kOutlineCount; ++i) n += costly(k.body, i);
  return k.reduced == 0 && n >= kOutlineCount;
}

// (Counted only for costly instructions: fewer than kOutlineCount of them
// each scan the body once, more stop at the count.)
bool outlined(const Kernel& k, size_t i) {
  return costly(k.body, i) && outlines(k);
}

std::string outlined_name(const Instr& in) {
  return str_cat("kiln_v_", kIdNames[static_cast<size_t>(in.op)],
                 in.dtype == DType::kFloat32 ? "_f32" : "_f64");
}

std::string vector_functions_text(const std::vector<Kernel>& kernels) {
  std::set<std::string> done;
  std::string s;
  for (const Kernel& k : kernels)
    for (size_t i = 0; i < k.body.size(); ++i) {
      if (!outlined(k, i)) continue;
      const Instr& in = k.body[i];
      const std::string name = outlined_name(in);
      if (!done.insert(name).second) continue;
      const char* t = ctype(in.dtype);
      const bool two = in.arity() == 2;
      s += str_cat(
          "#pragma omp declare simd notinbranch\nstatic __attribute__((noinline, flatten)) ", t,
          " ", name, "(", t, " x", two ? str_cat(", ", t, " y") : "", ") {\n  return ",
          functor(in.op), "(x", two ? ", y" : "", ");\n}\n");
    }
  return s;
}

// x of dtype `from` as a `to`; 16-bit floats go through float32, as the
// eager Cast does. A cast with a complex side goes through double parts as
// the eager one does: real -> (x, 0), complex -> its real part.
std::string cast_text(DType to, DType from, const std::string& x) {
  if (is_complex(to) || is_complex(from)) {
    std::string re = is_complex(from) ? str_cat("static_cast<double>(__real__ ", x, ")")
                     : is_half(from)  ? str_cat("kiln::fn::Cast<double>{}(",
                                                cast_text(DType::kFloat32, from, x), ")")
                                      : str_cat("kiln::fn::Cast<double>{}(", x, ")");
    if (!is_complex(to)) return cast_text(to, DType::kFloat64, re);
    const char* part = to == DType::kComplex64 ? "float" : "double";
    const std::string im =
        is_complex(from) ? str_cat("static_cast<double>(__imag__ ", x, ")") : std::string("0.0");
    return str_cat("kiln::fn::Complex{}(static_cast<", part, ">(", re, "), static_cast<", part,
                   ">(", im, "))");
  }
  std::string f = x;
  if (from == DType::kFloat16) f = str_cat("kiln::fn::detail::f16_to_f32(", x, ")");
  if (from == DType::kBFloat16) f = str_cat("kiln::fn::detail::bf16_to_f32(", x, ")");
  if (to == DType::kFloat16 || to == DType::kBFloat16) {
    if (!is_half(from)) f = str_cat("kiln::fn::Cast<float>{}(", f, ")");
    return str_cat("kiln::fn::detail::f32_to_", to == DType::kFloat16 ? "f16" : "bf16", "(", f,
                   ")");
  }
  return str_cat("kiln::fn::Cast<", ctype(to), ">{}(", f, ")");
}

std::string statement(const Kernel& k, size_t i, const char* prefix) {
  const Instr& in = k.body[i];
  std::string s =
      str_cat("const ", ctype(in.dtype), " ", v(static_cast<int32_t>(i), prefix), " = ");
  switch (in.kind) {
    case Instr::kConst: s += literal(in.dtype, in.bits); break;
    case Instr::kApply:
      s += str_cat(outlined(k, i) ? outlined_name(in) : functor(in.op), "(", v(in.a, prefix));
      if (in.b >= 0) s += str_cat(", ", v(in.b, prefix));
      if (in.c >= 0) s += str_cat(", ", v(in.c, prefix));
      s += ")";
      break;
    case Instr::kCast:
      s += cast_text(in.dtype, k.body[static_cast<size_t>(in.a)].dtype, v(in.a, prefix));
      break;
    case Instr::kSelect:
      s += str_cat("kiln::fn::Select{}(", v(in.a, prefix), ", ", v(in.b, prefix), ", ",
                   v(in.c, prefix), ")");
      break;
    case Instr::kLoad:
    case Instr::kReduce: throw InternalError("jit: no statement for a load or a reduction");
  }
  s += ";";
  if (i < k.origin.size() && !k.origin[i].empty()) s += str_cat("  // ", k.origin[i]);
  return s + "\n";
}

std::string signature_text(const Kernel& k) {
  std::string s = str_cat("extern \"C\" KILN_JIT_EXPORT void ", k.name,
                          "(const kiln_jit_args* a, int64_t r0, int64_t r1, int64_t c0, "
                          "int64_t c1) {\n  const int64_t R = a->rank;\n"
                          "  const int64_t* sh = a->shape;\n  const int64_t* st = a->strides;\n");
  for (size_t i = 0; i < k.inputs.size(); ++i)
    s += str_cat("  const ", mtype(k.inputs[i]), "* __restrict in", i, " = static_cast<const ",
                 mtype(k.inputs[i]), "*>(a->in[", i, "]);\n");
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const char* t = mtype(k.body[static_cast<size_t>(k.outputs[o])].dtype);
    s += str_cat("  ", t, "* __restrict out", o, " = static_cast<", t, "*>(a->out[", o, "]);\n");
  }
  return s;
}

std::string row_start_text(size_t n_in) {
  // Row r0's multi-index and input offsets by division once; later rows
  // step the index like an odometer (cheap when rows are short).
  std::string s = "  int64_t idx[16] = {0};\n";
  for (size_t i = 0; i < n_in; ++i) s += str_cat("  int64_t o", i, " = 0;\n");
  s += "  for (int64_t d = R - 2, rem = r0; d >= 0; --d) {\n"
       "    idx[d] = rem % sh[d];\n    rem /= sh[d];\n";
  for (size_t i = 0; i < n_in; ++i) s += str_cat("    o", i, " += idx[d] * st[", i, " * R + d];\n");
  return s + "  }\n";
}

std::string row_step_text(size_t n_in) {
  std::string s = "    for (int64_t d = R - 2; d >= 0; --d) {\n";
  for (size_t i = 0; i < n_in; ++i) s += str_cat("      o", i, " += st[", i, " * R + d];\n");
  s += "      if (++idx[d] < sh[d]) break;\n";
  for (size_t i = 0; i < n_in; ++i)
    s += str_cat("      o", i, " -= sh[d] * st[", i, " * R + d];\n");
  return s + "      idx[d] = 0;\n    }\n";
}
}  // namespace detail

namespace {
using namespace detail;

// Rows of at most this many points run as blocks of rows (short_rows_text).
constexpr int64_t kMaxShortRow = 16;

// One stage's loop over points: how it reads input x at the point, where
// the point's outputs and block-buffer slots are, and the loop itself.
struct PointLoop {
  std::function<std::string(int32_t)> load;  ///< input x's value at the point
  std::string out_index;                     ///< the point in the outputs
  std::string buf_index;                     ///< the point in a block buffer
  std::string open, close;                   ///< the loop(s) around one stage
  std::string indent;                        ///< of the statements
};

// The statements of stage `st` (all of them when there is one stage): the
// loads, constants and carried values it reads, its instructions, its
// stores to later stages' buffers and to the outputs.
std::string stage_body(const Kernel& k, const Stages& sg, int st, const PointLoop& pl) {
  const size_t n = k.body.size();
  const bool last = st + 1 >= std::max(sg.count(), 1);
  std::vector<uint8_t> need(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (sg.of[i] != st && !(sg.of[i] < 0 && sg.count() == 0)) continue;
    need[i] = 1;
    const Instr& in = k.body[i];
    if (in.kind == Instr::kLoad) continue;
    for (int32_t a : {in.a, in.b, in.c})
      if (a >= 0) need[static_cast<size_t>(a)] = 1;
  }
  for (int32_t o : k.outputs) {
    const auto i = static_cast<size_t>(o);
    if (sg.of[i] == st || (sg.of[i] < 0 && last)) need[i] = 1;
  }
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (!need[i]) continue;
    const Instr& in = k.body[i];
    const auto x = static_cast<int32_t>(i);
    if (in.kind == Instr::kLoad)
      s += str_cat(pl.indent, "const ", ctype(in.dtype), " ", v(x), " = ", pl.load(in.a), ";\n");
    else if (sg.of[i] >= 0 && sg.of[i] < st)
      s += str_cat(pl.indent, "const ", ctype(in.dtype), " ", v(x), " = blk", i, "[", pl.buf_index,
                   "];\n");
    else
      s += pl.indent + statement(k, i);
    if (sg.of[i] == st && sg.carried[i])
      s += str_cat(pl.indent, "blk", i, "[", pl.buf_index, "] = ", v(x), ";\n");
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const auto i = static_cast<size_t>(k.outputs[o]);
    if (sg.of[i] == st || (sg.of[i] < 0 && last))
      s += str_cat(pl.indent, "out", o, "[", pl.out_index, "] = ", v(k.outputs[o]), ";\n");
  }
  return s;
}

// The comment on a stage's loop that says what code it should get:
// "vector", "scalar" (no vector code), "strided" (inputs read with strides,
// vector code where the CPU gathers well) or "short" (a row of fewer points
// than a vector holds, a fallback of the short-rows loop).
// tests/cpp/jit/vectorize_test.cpp checks every "vector" loop is vectorized.
const char* kind_of(const Stages& sg, int st, const char* vector = "vector") {
  if (st < sg.count() && sg.scalar[static_cast<size_t>(st)]) return "scalar";
  return vector;
}

// Every stage's loop in order. `pl.open` (where "{kind}" becomes kind_of)
// and `pl.close` wrap each.
std::string stages_text(const Kernel& k, const Stages& sg, const PointLoop& pl,
                        const char* vector = "vector") {
  std::string s;
  for (int st = 0; st < std::max(sg.count(), 1); ++st) {
    std::string open = pl.open;
    const size_t at = open.find("{kind}");
    if (at != std::string::npos) open.replace(at, 6, kind_of(sg, st, vector));
    s += open + stage_body(k, sg, st, pl) + pl.close;
  }
  return s;
}

// The block buffers of the values carried between stages.
std::string buffers_text(const Kernel& k, const Stages& sg) {
  std::string s;
  for (size_t i = 0; i < k.body.size(); ++i)
    if (sg.carried[i])
      s += str_cat("  alignas(64) ", mtype(k.body[i].dtype), " blk", i, "[", sg.block, "];\n");
  return s;
}

// Whether a kernel reads or writes 16-bit floats (bfloat16, float16).
bool moves_halves(const Kernel& k) {
  return std::any_of(k.inputs.begin(), k.inputs.end(), is_half) ||
         std::any_of(k.outputs.begin(), k.outputs.end(),
                     [&](int32_t o) { return is_half(k.body[static_cast<size_t>(o)].dtype); });
}

// A loop over columns [lo, hi) of row `ob` with loads `load`: one loop per
// stage, within blocks of sg.block columns when there are several stages
// (a block loop is left out when `hi - lo` is a constant that fits one).
std::string columns_text(const Kernel& k, const Stages& sg,
                         const std::function<std::string(int32_t)>& load, const std::string& lo,
                         const std::string& hi, int64_t trip, const std::string& indent,
                         bool strided) {
  PointLoop pl;
  pl.load = load;
  pl.out_index = "ob + c";
  const char* vector = strided ? "strided" : trip > 0 && trip < kVectorPoints ? "short" : "vector";
  // A constant trip count stays a loop (`unroll 1`): the vectorizer takes it
  // whole, where complete unrolling would leave the vector code to SLP.
  const std::string pragmas =
      trip > 0 ? "#pragma GCC ivdep\n#pragma GCC unroll 1\n" : "#pragma GCC ivdep\n";
  if (sg.count() <= 1) {
    pl.close = indent + "}\n";
    pl.indent = indent + "  ";
    pl.buf_index = "c";
    if (trip <= 0 && !strided && !(sg.count() == 1 && sg.scalar[0]) && moves_halves(k)) {
      // GCC runs the last (hi - lo) % 16 points of a loop over 16-bit values
      // one by one (its vector epilogue takes 16); a loop of 8-point vectors
      // takes them (a [rows, 72] bf16 batch norm: 2.7x faster).
      pl.open =
          str_cat(pragmas, indent, "for (int64_t c = ", lo, "; c < cm; ++c) {  // kiln:{kind}\n");
      std::string s =
          str_cat(indent, "const int64_t cm = ", hi, " - ((", hi, " - ", lo, ") & 15);\n") +
          stages_text(k, sg, pl, vector);
      pl.open = str_cat("#pragma omp simd simdlen(8)\n", indent, "for (int64_t c = cm; c < ", hi,
                        "; ++c) {  // kiln:tail\n");
      return s + stages_text(k, sg, pl, "tail");
    }
    pl.open = str_cat(pragmas, indent, "for (int64_t c = ", lo, "; c < ", hi,
                      "; ++c) {  // kiln:{kind}\n");
    return stages_text(k, sg, pl, vector);
  }
  const bool one_block = trip > 0 && trip <= sg.block;
  const std::string in2 = one_block ? indent : indent + "  ";
  pl.buf_index = one_block ? str_cat("c - ", lo) : "c - b";
  pl.indent = in2 + "  ";
  pl.close = in2 + "}\n";
  auto text = [&](const std::string& b, const std::string& e) {
    std::string t;
    for (int st = 0; st < sg.count(); ++st) {
      pl.open = str_cat(pragmas, in2, "for (int64_t c = ", b, "; c < ", e,
                        "; ++c) {  // kiln:", kind_of(sg, st, vector), "\n");
      t += pl.open + stage_body(k, sg, st, pl) + pl.close;
    }
    return t;
  };
  if (one_block) return text(lo, hi);
  return str_cat(indent, "for (int64_t b = ", lo, "; b < ", hi, "; b += ", sg.block, ") {\n", in2,
                 "const int64_t e = ", hi, " - b < ", sg.block, " ? ", hi, " : b + ", sg.block,
                 ";\n") +
         text("b", "e") + indent + "}\n";
}

// Loads of the inner loop: fast (specialized pattern) or generic strides.
std::string load_text(const std::vector<uint8_t>& pattern, bool fast, int32_t x) {
  return !fast             ? str_cat("in", x, "[o", x, " + c * s", x, "]")
         : pattern[x] == 3 ? str_cat("p", x, "[c - c0]")
         : pattern[x] == 2 ? str_cat("p", x, "[c * s", x, "]")
         : pattern[x]      ? str_cat("p", x, "[c]")
                           : str_cat("b", x);
}

// What static dims predict of a kernel's layout (unknown dims taken as 2).
struct Prediction {
  Layout layout;
  std::vector<uint8_t> pattern;  ///< per input: inner stride 0, 1, or 2 (any other)
  bool strided = false;          ///< some input's pattern is 2
  int64_t cols = -1;             ///< the inner loop's length; -1 when a dim is unknown
};
Prediction predict(const Kernel& k);

// Short rows of a kernel in stages, as flat runs of points: each block of m
// rows is one run of m * cols points, so every stage's loop reads and
// writes consecutive values (vectorized across rows, the stages' loops
// would move each carried value through strided loads and stores: a chain
// of 19 activations over [1000, 10] plus a [10] bias ran 2.6x slower than
// graph mode). One stage runs kMaxBlock points a block. Inputs whose rows follow one another (row
// stride cols) are read in place; the others are first written out as a run of the block's points:
// a row read by every row (a bias) once per slab, the rest per block.
std::string flat_rows_text(const Kernel& k, const Prediction& pr, const Stages& sg,
                           const std::vector<int64_t>& rs) {
  const std::vector<uint8_t>& pattern = pr.pattern;
  const int64_t block = sg.count() > 1 ? sg.block : kMaxBlock;
  const int64_t cols = pr.cols, rows = std::max<int64_t>(1, block / cols);
  const size_t n_in = k.inputs.size();
  std::string s = str_cat("      m = m < ", rows, " ? m : ", rows, ";\n");
  for (size_t i = 0; i < n_in; ++i) {
    const char* t = mtype(k.inputs[i]);
    if (pattern[i] && rs[i] == cols) {
      s += str_cat("      const ", t, "* __restrict p", i, " = in", i, " + o", i, ";\n");
    } else if (!pattern[i] && rs[i] == 0) {
      s += str_cat("      const ", t, " b", i, " = in", i, "[o", i, "];\n");
    } else {
      // The value at point j * cols + c of the run.
      const std::string at = pattern[i] && rs[i] == 0 ? "c"
                             : pattern[i]             ? str_cat("j * ", rs[i], " + c")
                                                      : str_cat("j * ", rs[i]);
      s += str_cat("      alignas(64) ", t, " e", i, "[", rows * cols, "];\n",
                   "      for (int64_t j = 0; j < m; ++j)\n        for (int64_t c = 0; c < ", cols,
                   "; ++c) e", i, "[j * ", cols, " + c] = in", i, "[o", i, " + ", at, "];\n");
    }
  }
  PointLoop pl;
  pl.load = [&](int32_t x) {
    const auto i = static_cast<size_t>(x);
    return pattern[i] && rs[i] == cols ? str_cat("p", x, "[q]")
           : !pattern[i] && rs[i] == 0 ? str_cat("b", x)
                                       : str_cat("e", x, "[q]");
  };
  pl.out_index = str_cat("r * ", cols, " + q");
  pl.buf_index = "q";
  pl.open = str_cat("#pragma GCC ivdep\n      for (int64_t q = 0; q < m * ", cols,
                    "; ++q) {  // kiln:{kind}\n");
  pl.close = "      }\n";
  pl.indent = "        ";
  return s + stages_text(k, sg, pl) + "      r += m;\n    }\n    return;\n  }\n";
}

// Rows of a few points (CharUnpack's 8): one call per row leaves the unrolled
// row scalar. When every input's row stride is the static prediction, the
// rows of each slab run in one loop over rows, which vectorizes across them
// (each row's points unrolled, stores interleaved); with several stages, a
// block of rows at a time.
std::string short_rows_text(const Kernel& k, const Prediction& pr, const Stages& sg) {
  const Layout& l = pr.layout;
  const std::vector<uint8_t>& pattern = pr.pattern;
  const int64_t cols = pr.cols;
  if (l.rank < 2 || cols > kMaxShortRow || pr.strided) return "";
  const size_t n_in = k.inputs.size();
  std::vector<int64_t> rs(n_in);
  // The expected path (__builtin_expect): GCC would take a test of a dozen
  // strides for a rare one, optimize the branch for size and vectorize
  // nothing in it.
  std::string s = str_cat("  if (__builtin_expect(a->fast && R >= 2 && c0 == 0 && c1 == ", cols,
                          " && sh[R - 1] == ", cols);
  for (size_t i = 0; i < n_in; ++i) {
    rs[i] = l.strides[i * static_cast<size_t>(l.rank) + static_cast<size_t>(l.rank) - 2];
    s += str_cat(" && st[", i, " * R + R - 2] == ", rs[i]);
  }
  s += ", 1)) {\n    for (int64_t r = r0; r < r1;) {\n";
  for (size_t i = 0; i < n_in; ++i) s += str_cat("      int64_t o", i, " = 0;\n");
  s += "      for (int64_t d = R - 2, rem = r; d >= 0; --d) {\n"
       "        const int64_t at = rem % sh[d];\n        rem /= sh[d];\n";
  for (size_t i = 0; i < n_in; ++i) s += str_cat("        o", i, " += at * st[", i, " * R + d];\n");
  s += "      }\n      const int64_t left = sh[R - 2] - r % sh[R - 2];\n"
       "      int64_t m = r1 - r < left ? r1 - r : left;\n";
  // An input read in place makes flat runs pay (a chain of cheap ops over
  // [1000, 10] reading its rows ran 1.8x faster flat); with per-row values
  // and a broadcast row only (CharUnpack), expanding them cost 8x.
  bool in_place = false;
  for (size_t i = 0; i < n_in; ++i) in_place = in_place || (pattern[i] && rs[i] == cols);
  if (sg.count() > 1 || in_place) return s + flat_rows_text(k, pr, sg, rs);
  // Inputs the same for every row of the block are copied out first: GCC
  // honours __restrict on parameters only, and byte loads may alias the
  // outputs, so it would reload them per row (and vectorize nothing).
  for (size_t i = 0; i < n_in; ++i) {
    const char* t = mtype(k.inputs[i]);
    if (rs[i] != 0)
      s += str_cat("      const ", t, "* __restrict p", i, " = in", i, " + o", i, ";\n");
    else if (pattern[i])
      s += str_cat("      ", t, " t_in", i, "[", cols, "];\n      for (int64_t c = 0; c < ", cols,
                   "; ++c) t_in", i, "[c] = in", i, "[o", i, " + c];\n");
    else
      s += str_cat("      const ", t, " b", i, " = in", i, "[o", i, "];\n");
  }
  PointLoop pl;
  pl.load = [&](int32_t x) {
    const auto i = static_cast<size_t>(x);
    return pattern[i] && rs[i] == 0 ? str_cat("t_in", x, "[c]")
           : pattern[i]             ? str_cat("p", x, "[j * ", rs[i], " + c]")
           : rs[i] == 0             ? str_cat("b", x)
                                    : str_cat("p", x, "[j * ", rs[i], "]");
  };
  pl.out_index = "ob + c";
  pl.buf_index = str_cat("j * ", cols, " + c");
  pl.open = str_cat("#pragma GCC ivdep\n      for (int64_t j = 0; j < m; ++j) {  // kiln:{kind}\n",
                    "        const int64_t ob = (r + j) * ", cols, ";\n#pragma GCC unroll ", cols,
                    "\n        for (int64_t c = 0; c < ", cols, "; ++c) {\n");
  pl.close = "        }\n      }\n";
  pl.indent = "          ";
  // Rows an input reads apart (a slice) are gathers across rows.
  bool gathers = false;
  for (size_t i = 0; i < n_in; ++i) gathers |= pattern[i] && rs[i] != 0 && rs[i] != cols;
  return s + stages_text(k, sg, pl, gathers ? "strided" : "vector") +
         "      r += m;\n    }\n    return;\n  }\n";
}

// The fast path's row (every input has the predicted inner stride):
// pointers, then a constant-trip loop for a short static row, then the
// loop over [c0, c1). Pattern 3 marks an input read from its transposed
// tile (a->tile, a row of a->tile_pitch values per kernel row).
std::string fast_row_text(const Kernel& k, const Stages& sg, const std::vector<uint8_t>& pattern,
                          int64_t short_cols, const std::string& indent) {
  std::string s;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    const char* t = mtype(k.inputs[i]);
    if (pattern[i] == 3)
      s += str_cat(indent, "const ", t, "* __restrict p", i, " = static_cast<const ", t,
                   "*>(a->tile[", i, "]) + (r - r0) * a->tile_pitch;\n");
    else if (pattern[i])
      s += str_cat(indent, "const ", t, "* __restrict p", i, " = in", i, " + o", i, ";\n");
    else
      s += str_cat(indent, "const ", t, " b", i, " = in", i, "[o", i, "];\n");
    if (pattern[i] == 2)
      s += str_cat(indent, "const int64_t s", i, " = st[", i, " * R + R - 1];\n");
  }
  const auto load = [&](int32_t x) { return load_text(pattern, true, x); };
  const bool strided = std::find(pattern.begin(), pattern.end(), 2) != pattern.end();
  // A short inner dim known statically gets a constant trip count, which
  // the compiler unrolls and vectorizes across the row (CharUnpack's 8).
  // `ivdep` on every column loop: the pointers are __restrict already, but
  // GCC still versions the loop for aliasing and gives up past 10 pointer
  // pairs (a kernel with 4+ outputs ran scalar, ~7x slower).
  if (short_cols > 0 && short_cols <= 64)
    s += str_cat(indent, "if (c0 == 0 && c1 == ", short_cols, ") {\n") +
         columns_text(k, sg, load, "0", str_cat(short_cols), short_cols, indent + "  ", strided) +
         indent + "  goto next_row;\n" + indent + "}\n";
  return s + columns_text(k, sg, load, "c0", "c1", -1, indent, strided);
}

std::string kernel_text(const Kernel& k) {
  if (k.reduced > 0) return row_kernel_text(k);
  const Prediction pr = predict(k);
  const std::vector<uint8_t>& pattern = pr.pattern;
  const size_t n_in = k.inputs.size();
  std::vector<uint8_t> computed(k.body.size(), 0);
  for (size_t i = 0; i < k.body.size(); ++i)
    computed[i] = k.body[i].kind != Instr::kLoad && k.body[i].kind != Instr::kConst;
  // A kernel over fewer points than a vector holds (a train step's scalar
  // Adam terms) runs them in one loop: stages would only add loops.
  int64_t points = 1;
  for (int64_t d : k.dims) points = points < 0 || d < 0 ? -1 : points * d;
  const Stages sg =
      points >= 0 && points < kVectorPoints ? one_stage(k, computed) : plan_stages(k, computed);
  std::string s =
      str_cat("// ", k.name, ": ", k.body.size(), " instructions over rank ", k.rank,
              sg.count() > 1 ? str_cat(" in ", sg.count(), " stages") : "", "\n", signature_text(k),
              "  const int64_t cols = sh[R - 1];\n", buffers_text(k, sg));
  const int64_t short_cols = pr.cols;
  if (short_cols > 0) s += short_rows_text(k, pr, sg);
  s += row_start_text(n_in);
  s += "  for (int64_t r = r0; r < r1; ++r) {\n"
       "    const int64_t ob = r * cols;\n    if (__builtin_expect(a->fast, 1)) {\n";
  // Inputs read transposed (pattern 2) come as tiles when the runtime
  // copied them out (split() in runtime.cpp); else each value is read with
  // its stride.
  if (pr.strided) {
    std::vector<uint8_t> tiled = pattern;
    for (uint8_t& b : tiled) b = b == 2 ? 3 : b;
    s += "      if (a->tile) {\n" + fast_row_text(k, sg, tiled, short_cols, "        ") +
         "      } else {\n" + fast_row_text(k, sg, pattern, short_cols, "        ") + "      }\n";
  } else {
    s += fast_row_text(k, sg, pattern, short_cols, "      ");
  }
  // Strides other than predicted (rare) run out of line, in a lambda (taking
  // copies: a reference would let byte stores alias the locals; block
  // buffers of its own) that
  // `flatten` does not reach: GCC compiles it for size, not as a second
  // vectorized copy of every stage (a 64-activation chain took 17 s to
  // compile with it inline, docs/BENCHMARKS.md).
  s += "    } else {\n      [=]() __attribute__((noinline, cold)) {\n" + buffers_text(k, sg);
  for (size_t i = 0; i < n_in; ++i)
    s += str_cat("      const int64_t s", i, " = st[", i, " * R + R - 1];\n");
  s += columns_text(
           k, sg, [&](int32_t x) { return load_text(pattern, false, x); }, "c0", "c1", -1, "      ",
           true) +
       "      }();\n    }\n";
  if (short_cols > 0 && short_cols <= 64) s += "  next_row:\n";
  return s + row_step_text(n_in) + "  }\n}\n\n";
}

}  // namespace

namespace {
// Unknown dims are taken as 2, and as 3 to check the inner loop's length:
// when views keep rows apart ([None, 16] of a [None, 400]), it is static
// even though the row count is not. The runtime checks what it relies on.
Prediction predict(const Kernel& k) {
  bool unknown = false;
  auto layout = [&](int64_t guess) {
    auto known = [&](std::vector<int64_t> d) {
      for (int64_t& x : d)
        if (x < 0) {
          x = guess;
          unknown = true;
        }
      return d;
    };
    std::vector<std::vector<int64_t>> ins;
    for (const auto& d : k.input_dims) ins.push_back(known(d));
    return collapse(known(k.dims), ins, k.reduced, k.input_strides);
  };
  Prediction p;
  p.layout = layout(2);
  p.pattern = p.layout.inner_pattern();
  p.strided = std::find(p.pattern.begin(), p.pattern.end(), 2) != p.pattern.end();
  p.cols = p.layout.cols();
  if (unknown) {
    const Layout other = layout(3);
    if (other.rank != p.layout.rank || other.cols() != p.cols || other.strides != p.layout.strides)
      p.cols = -1;
  }
  return p;
}
}  // namespace

std::vector<uint8_t> predicted_pattern(const Kernel& k) {
  return predict(k).pattern;
}

// Row kernels stream large outputs: a row computed into an aligned buffer is
// written with non-temporal stores (no read for ownership of the line), then
// fenced before the kernel returns.
constexpr const char* kStreamHelpers = R"(static inline void kiln_stream_row(void* __restrict dst,
                                   const void* __restrict src, int64_t bytes) {
#if defined(__AVX__)
  typedef float kiln_v8 __attribute__((vector_size(32)));
  if ((reinterpret_cast<uintptr_t>(dst) & 31) == 0 && (bytes & 31) == 0) {
    for (int64_t i = 0; i < bytes; i += 32)
      __builtin_ia32_movntps256(reinterpret_cast<float*>(static_cast<char*>(dst) + i),
                                *reinterpret_cast<const kiln_v8*>(static_cast<const char*>(src) + i));
    return;
  }
#endif
  __builtin_memcpy(dst, src, static_cast<size_t>(bytes));
}
static inline void kiln_stream_fence() {
#if defined(__AVX__)
  __builtin_ia32_sfence();
#endif
}

)";

namespace {

// What the compiler sees of a kernel's text: its comments dropped and its
// name replaced, so two kernels of one code compare equal.
std::string kernel_code(const std::string& text, const std::string& name) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "//") == 0) {
      i = text.find('\n', i);
      if (i == std::string::npos) break;
      continue;
    }
    const bool at_name = text.compare(i, name.size(), name) == 0 &&
                         (i + name.size() == text.size() ||
                          !(std::isalnum(static_cast<unsigned char>(text[i + name.size()])) ||
                            text[i + name.size()] == '_'));
    if (at_name) {
      out += '@';
      i += name.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

// `name` declared as an alias of the kernel `target` of the same code: the
// declaration line of `text` (name's own kernel text) with the alias attribute.
std::string alias_text(const std::string& text, const std::string& name,
                       const std::string& target) {
  const std::string head = "extern \"C\" KILN_JIT_EXPORT void " + name + "(";
  const size_t b = text.find(head);
  const size_t e = b == std::string::npos ? b : text.find(") {", b);
  if (e == std::string::npos) throw InternalError(str_cat("jit: no signature in kernel ", name));
  return str_cat("// ", name, ": the code of ", target, "\nextern \"C\" __attribute__((alias(\"",
                 target, "\"), visibility(\"default\"))) void ", name, "(",
                 text.substr(b + head.size(), e - b - head.size()), ");\n\n");
}

}  // namespace

// Kernels are `flatten`: every prelude function is inlined into them. GCC's
// inliner otherwise stops after a few transcendentals in one function ("the
// unit grows too large") and calls tanh_f32 out of line, which leaves the
// loop that calls it scalar (25 x tanh over [1000, 100]: 27 ms, 1.0 ms in
// graph mode). The costly ops are the exception: their vector functions
// (outlined) are called, not inlined, and vectorize once per unit.
std::string emit_module(const std::vector<Kernel>& kernels) {
  std::string s = str_cat("// Generated by kiln's JIT: ", kernels.size(), " fused kernel",
                          kernels.size() == 1 ? "" : "s", ".\n", prelude_source(),
                          "\n#define KILN_JIT_EXPORT "
                          "__attribute__((visibility(\"default\"), flatten))\n"
                          "struct kiln_jit_args {\n  const void* const* in;\n  void* const* out;\n"
                          "  int64_t rank;\n  const int64_t* shape;\n  const int64_t* strides;\n"
                          "  int64_t fast;\n  int64_t stream;\n  const void* const* tile;\n"
                          "  int64_t tile_pitch;\n};\n\n") +
                  kStreamHelpers + vector_functions_text(kernels);
  // Kernels whose code differs only in their names and comments (a model's
  // repeated blocks: 282 kernels of EfficientNetV2-S are 21 codes) are
  // compiled once; the others are aliases of the first.
  std::unordered_map<std::string, std::string> first_of_code;
  for (const Kernel& k : kernels) {
    std::string text = kernel_text(k);
    auto [it, fresh] = first_of_code.try_emplace(kernel_code(text, k.name), k.name);
    s += fresh ? text : alias_text(text, k.name, it->second);
  }
  return s;
}

}  // namespace kiln::jit
