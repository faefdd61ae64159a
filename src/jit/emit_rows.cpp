// Row kernels: a fused kernel whose reductions fold the last dims of its
// space. Each row runs in passes over its N points (N static): pass p feeds
// the reductions whose operands need the results of p earlier reductions and
// writes the per-point outputs available then; per-row values are computed
// once between passes. A row of a few KB stays in L1 across the passes, so
// memory traffic is one read of the inputs and one write of the outputs.
// Reductions keep 16 independent accumulators (the order the eager reduce
// kernel uses for rows); `omp simd` on the lane loop keeps GCC from unrolling
// it before vectorizing (a max fold stayed scalar otherwise). A costly per-point value that a
// later pass needs again (softmax's exp) is kept in a row-sized stack buffer
// instead of being recomputed. With `stream` set (large outputs), each row is
// computed into a stack buffer and written with non-temporal stores.
#include <algorithm>
#include <set>

#include "emit_util.h"
#include "kernels/cpu/functors.h"
#include "kiln/dtype.h"

namespace kiln::jit::detail {
namespace {

constexpr int kLanes = 16;
constexpr int64_t kMaxSpillBytes = 32 << 10;  // per buffer
constexpr int64_t kMaxStackBytes = 96 << 10;  // all buffers of a kernel

struct Plan {
  std::vector<uint8_t> row;     // per value: per-row
  std::vector<int> stage;       // per value: reductions it waits on, in sequence
  std::vector<uint8_t> spill;   // per value: kept in a row buffer
  std::vector<uint8_t> staged;  // per output: a row buffer to stream from
  int passes = 0;
  int64_t n = 1;  // points per row
};

// Whether point value i is costly enough to keep rather than recompute: two
// or more per-point instructions (softmax's exp(x - max)); one is cheaper to
// recompute than to store and load.
bool costly(const Kernel& k, const Plan& p, size_t i) {
  int count = 0;
  std::vector<size_t> stack{i};
  std::set<size_t> seen;
  while (!stack.empty()) {
    const size_t j = stack.back();
    stack.pop_back();
    const Instr& in = k.body[j];
    if (!seen.insert(j).second || p.row[j] || in.kind == Instr::kLoad) continue;
    if (++count >= 2) return true;
    for (int32_t a : {in.a, in.b, in.c})
      if (a >= 0) stack.push_back(static_cast<size_t>(a));
  }
  return false;
}

// Whether point value i is read by an instruction of a later pass.
bool read_later(const Kernel& k, const Plan& p, size_t i) {
  for (size_t j = i + 1; j < k.body.size(); ++j) {
    const Instr& u = k.body[j];
    if (u.kind == Instr::kReduce || p.row[j] || p.stage[j] <= p.stage[i]) continue;
    const auto x = static_cast<int32_t>(i);
    if (u.a == x || u.b == x || u.c == x) return true;
  }
  return false;
}

// Row buffers on the stack, while it allows: costly point values a later
// pass reads (spill), then per-point outputs to stream from (staged).
void choose_buffers(const Kernel& k, Plan& p) {
  int64_t stack = 0;
  auto fits = [&](DType dt) {
    const int64_t bytes = p.n * static_cast<int64_t>(dtype_size(dt));
    if (bytes > kMaxSpillBytes || stack + bytes > kMaxStackBytes) return false;
    stack += bytes;
    return true;
  };
  p.spill.assign(k.body.size(), 0);
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Instr& in = k.body[i];
    const bool value = in.kind != Instr::kLoad && in.kind != Instr::kConst &&
                       in.kind != Instr::kReduce && !p.row[i];
    p.spill[i] = value && read_later(k, p, i) && costly(k, p, i) && fits(in.dtype);
  }
  for (int32_t o : k.outputs)
    p.staged.push_back(!p.row[static_cast<size_t>(o)] &&
                       fits(k.body[static_cast<size_t>(o)].dtype));
}

Plan plan(const Kernel& k) {
  Plan p;
  p.row = k.per_row();
  p.stage.assign(k.body.size(), 0);
  for (int d = k.rank - k.reduced; d < k.rank; ++d) p.n *= k.dims[static_cast<size_t>(d)];
  int last = -1;
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Instr& in = k.body[i];
    if (in.kind == Instr::kLoad || in.kind == Instr::kConst) continue;
    if (in.kind == Instr::kReduce) {
      p.stage[i] = p.stage[static_cast<size_t>(in.a)] + 1;
      last = std::max(last, p.stage[static_cast<size_t>(in.a)]);
      continue;
    }
    for (int32_t a : {in.a, in.b, in.c})
      if (a >= 0) p.stage[i] = std::max(p.stage[i], p.stage[static_cast<size_t>(a)]);
  }
  for (int32_t o : k.outputs)
    if (!p.row[static_cast<size_t>(o)]) last = std::max(last, p.stage[static_cast<size_t>(o)]);
  p.passes = last + 1;
  choose_buffers(k, p);
  return p;
}

// Softmax's exp(x - max(x)) on float32 rows: every argument lies in
// [min(x) - max(x), 0]. When that is inside exp_f32_normal's range (no -inf
// masks; NaN and inf fail the test, as the folds propagate them), the row
// takes a second copy of the later passes whose exps skip the clamps (same
// bits, as the eager kernel does per row). A min fold joins the max's pass.
struct NormalExp {
  std::vector<uint8_t> exps;  // per value: an exp the fast copy shortens
  int32_t flag = -1;          // the per-row bool that picks the fast copy
  int stage = -1;             // the stage where the flag is known
};

// The max reduction m when value e is Exp(Sub(x, m)) with m = Reduce(Maximum, x).
int32_t softmax_max(const Kernel& k, const Instr& e) {
  if (e.kind != Instr::kApply || e.op != OpId::Exp || e.dtype != DType::kFloat32) return -1;
  const Instr& sub = k.body[static_cast<size_t>(e.a)];
  if (sub.kind != Instr::kApply || sub.op != OpId::Sub) return -1;
  const Instr& m = k.body[static_cast<size_t>(sub.b)];
  const bool max_of_x = m.kind == Instr::kReduce && m.op == OpId::Maximum && m.a == sub.a;
  return max_of_x ? sub.b : -1;
}

// Appends the range test of every such max at the earliest stage to k's body.
NormalExp add_normal_exp_check(Kernel& k) {
  NormalExp ne;
  const Plan first = plan(k);
  std::vector<int32_t> maxes(k.body.size(), -1);
  for (size_t i = 0; i < k.body.size(); ++i) {
    maxes[i] = softmax_max(k, k.body[i]);
    if (maxes[i] < 0) continue;
    const int st = first.stage[static_cast<size_t>(maxes[i])];
    ne.stage = ne.stage < 0 ? st : std::min(ne.stage, st);
  }
  ne.exps.assign(k.body.size(), 0);
  if (ne.stage < 0) return ne;
  auto push = [&](Instr in, const char* why) {
    k.body.push_back(in);
    k.origin.resize(k.body.size() - 1);
    k.origin.emplace_back(why);
    return static_cast<int32_t>(k.body.size() - 1);
  };
  const auto f32 = DType::kFloat32;
  const int32_t lo =
      push({Instr::kConst, f32, OpId::kNumOps, -1, -1, -1, bits_of(fn::detail::kExpNormalLo, f32)},
           "exp_f32_normal's lowest argument");
  std::set<int32_t> done;
  for (size_t i = 0; i < maxes.size(); ++i) {
    const int32_t m = maxes[i];
    if (m < 0 || first.stage[static_cast<size_t>(m)] != ne.stage) continue;
    ne.exps[i] = 1;
    if (!done.insert(m).second) continue;
    const int32_t x = k.body[static_cast<size_t>(m)].a;
    const int32_t mn = push({Instr::kReduce, f32, OpId::Minimum, x, -1, -1, highest_bits(f32)},
                            "the row's min, for the exp range test");
    const int32_t spread = push({Instr::kApply, f32, OpId::Sub, mn, m}, "min - max");
    int32_t ok = push({Instr::kApply, DType::kBool, OpId::GreaterEqual, spread, lo},
                      "every exp(x - max) a normal float");
    if (ne.flag >= 0)
      ok = push({Instr::kApply, DType::kBool, OpId::LogicalAnd, ne.flag, ok}, "all rows' tests");
    ne.flag = ok;
  }
  ne.exps.resize(k.body.size(), 0);
  return ne;
}

// The point values pass `pass` computes for `roots`: their cones through
// point values, stopping at per-row values and at values kept by an earlier
// pass.
std::vector<uint8_t> cone(const Kernel& k, const Plan& p, int pass,
                          const std::vector<int32_t>& roots) {
  std::vector<uint8_t> need(k.body.size(), 0);
  std::vector<int32_t> stack = roots;
  while (!stack.empty()) {
    const auto j = static_cast<size_t>(stack.back());
    stack.pop_back();
    if (need[j] || p.row[j]) continue;
    need[j] = 1;
    const Instr& in = k.body[j];
    if (in.kind == Instr::kLoad || (p.spill[j] && p.stage[j] < pass)) continue;
    for (int32_t a : {in.a, in.b, in.c})
      if (a >= 0) stack.push_back(a);
  }
  return need;
}

// One point's statements (index j) and the writes of this pass.
std::string point_body(const Kernel& k, const Plan& p, int pass, const std::vector<uint8_t>& need,
                       const std::vector<uint8_t>& fast, const std::string& ind) {
  std::string s;
  for (size_t i = 0; i < k.body.size(); ++i) {
    if (!need[i]) continue;
    const Instr& in = k.body[i];
    const auto x = static_cast<int32_t>(i);
    if (in.kind == Instr::kLoad)
      s += str_cat(ind, "const ", ctype(in.dtype), " ", v(x), " = p", in.a, "[j];\n");
    else if (p.spill[i] && p.stage[i] < pass)
      s += str_cat(ind, "const ", ctype(in.dtype), " ", v(x), " = s", i, "[j];\n");
    else if (fast[i])
      s += str_cat(ind, "const float ", v(x), " = kiln::fn::detail::exp_f32_normal(", v(in.a),
                   ");  // ", k.origin[i], ", normal range\n");
    else
      s += ind + statement(k, i);
    if (p.spill[i] && p.stage[i] == pass) s += str_cat(ind, "s", i, "[j] = ", v(x), ";\n");
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const auto val = static_cast<size_t>(k.outputs[o]);
    if (!p.row[val] && p.stage[val] == pass)
      s += str_cat(ind, "d", o, "[j] = ", v(k.outputs[o]), ";\n");
  }
  return s;
}

// Streams the staged outputs this pass wrote.
std::string stream_text(const Kernel& k, const Plan& p, int pass) {
  std::string s;
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const auto val = static_cast<size_t>(k.outputs[o]);
    if (p.staged[o] && !p.row[val] && p.stage[val] == pass)
      s += str_cat("    if (a->stream) kiln_stream_row(out", o, " + ob, w", o, ", N * sizeof(",
                   ctype(k.body[val].dtype), "));\n");
  }
  return s;
}

std::string pass_text(const Kernel& k, const Plan& p, int pass, const std::vector<uint8_t>& fast) {
  std::vector<int32_t> roots, folds;
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Instr& in = k.body[i];
    if (in.kind == Instr::kReduce && p.stage[static_cast<size_t>(in.a)] == pass) {
      folds.push_back(static_cast<int32_t>(i));
      roots.push_back(in.a);
    }
    if (p.spill[i] && p.stage[i] == pass) roots.push_back(static_cast<int32_t>(i));
  }
  for (int32_t o : k.outputs)
    if (!p.row[static_cast<size_t>(o)] && p.stage[static_cast<size_t>(o)] == pass)
      roots.push_back(o);
  if (roots.empty()) return "";
  const std::vector<uint8_t> need = cone(k, p, pass, roots);
  std::string s = str_cat("    // pass ", pass, "\n");
  if (folds.empty())
    return s + "#pragma omp simd\n    for (int64_t j = 0; j < N; ++j) {\n" +
           point_body(k, p, pass, need, fast, "      ") + "    }\n" + stream_text(k, p, pass);
  for (int32_t f : folds) {
    const Instr& in = k.body[static_cast<size_t>(f)];
    s += str_cat("    ", ctype(in.dtype), " a", f, "[", kLanes, "];\n    for (int l = 0; l < ",
                 kLanes, "; ++l) a", f, "[l] = ", literal(in.dtype, in.bits), ";\n    ",
                 ctype(in.dtype), " t", f, " = ", literal(in.dtype, in.bits), ";\n");
  }
  // acc is "a<f>[l]" (a lane) or "t<f>" (the tail's own accumulator).
  auto fold = [&](bool lane, const std::string& ind) {
    std::string t;
    for (int32_t f : folds) {
      const Instr& in = k.body[static_cast<size_t>(f)];
      const std::string acc = lane ? str_cat("a", f, "[l]") : str_cat("t", f);
      t += str_cat(ind, acc, " = ", functor(in.op), "(", acc, ", ", v(in.a), ");\n");
    }
    return t;
  };
  const std::string c = str_cat("c", pass);
  s += str_cat("    int64_t ", c, " = 0;\n    for (; ", c, " + ", kLanes, " <= N; ", c,
               " += ", kLanes, ") {\n#pragma omp simd\n      for (int64_t l = 0; l < ", kLanes,
               "; ++l) {\n        const int64_t j = ", c, " + l;\n") +
       point_body(k, p, pass, need, fast, "        ") + fold(true, "        ") +
       str_cat("      }\n    }\n    for (; ", c, " < N; ++", c, ") {\n      const int64_t j = ", c,
               ";\n") +
       point_body(k, p, pass, need, fast, "      ") + fold(false, "      ") + "    }\n";
  for (int32_t f : folds) {
    const Instr& in = k.body[static_cast<size_t>(f)];
    s += str_cat("    for (int w = ", kLanes / 2,
                 "; w > 0; w /= 2)\n      for (int l = 0; l < w; ++l) a", f,
                 "[l] = ", functor(in.op), "(a", f, "[l], a", f, "[l + w]);\n    const ",
                 ctype(in.dtype), " ", v(f), " = ", functor(in.op), "(a", f, "[0], t", f, ");\n");
  }
  return s + stream_text(k, p, pass);
}

// Per-row values that become available after `stage` reductions in sequence.
std::string row_values(const Kernel& k, const Plan& p, int stage) {
  std::string s;
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Instr& in = k.body[i];
    if (!p.row[i] || p.stage[i] != stage || in.kind == Instr::kReduce) continue;
    if (in.kind == Instr::kLoad)
      s += str_cat("    const ", ctype(in.dtype), " ", v(static_cast<int32_t>(i)), " = in", in.a,
                   "[o", in.a, "];\n");
    else
      s += "    " + statement(k, i);
  }
  return s;
}

// Text indented by two more spaces (pragmas stay at the line start).
std::string indent(const std::string& text) {
  std::string s;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const size_t stop = end == std::string::npos ? text.size() : end + 1;
    if (text[at] != '#') s += "  ";
    s.append(text, at, stop - at);
    at = stop;
  }
  return s;
}

// Passes `from` to the end, the per-row values between them and the per-row
// outputs, with the exps in `fast` shortened.
std::string tail_text(const Kernel& k, const Plan& p, int from, const std::vector<uint8_t>& fast) {
  std::string s;
  for (int pass = from; pass < p.passes; ++pass)
    s += pass_text(k, p, pass, fast) + row_values(k, p, pass + 1);
  for (size_t o = 0; o < k.outputs.size(); ++o)
    if (p.row[static_cast<size_t>(k.outputs[o])])
      s += str_cat("    out", o, "[r] = ", v(k.outputs[o]), ";\n");
  return s;
}

}  // namespace

std::string row_kernel_text(const Kernel& kernel) {
  Kernel k = kernel;
  const NormalExp ne = add_normal_exp_check(k);
  const Plan p = plan(k);
  const size_t n_in = k.inputs.size();
  std::string s =
      str_cat("// ", k.name, ": ", k.body.size(), " instructions, rows of ", p.n, " points in ",
              p.passes, " passes\n", signature_text(k), "  constexpr int64_t N = ", p.n, ";\n");
  for (size_t i = 0; i < k.body.size(); ++i)
    if (p.spill[i]) s += str_cat("  alignas(64) ", ctype(k.body[i].dtype), " s", i, "[N];\n");
  for (size_t o = 0; o < k.outputs.size(); ++o)
    if (p.staged[o])
      s += str_cat("  alignas(64) ", ctype(k.body[static_cast<size_t>(k.outputs[o])].dtype), " w",
                   o, "[N];\n");
  s += row_start_text(n_in) +
       "  for (int64_t r = r0; r < r1; ++r) {\n    const int64_t ob = r * N;\n";
  for (size_t i = 0; i < n_in; ++i) {
    const auto& d = k.input_dims[i];
    if (std::any_of(d.end() - k.reduced, d.end(), [](int64_t x) { return x != 1; }))
      s += str_cat("    const ", ctype(k.inputs[i]), "* __restrict p", i, " = in", i, " + o", i,
                   ";\n");
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const auto val = static_cast<size_t>(k.outputs[o]);
    if (p.row[val]) continue;
    const char* t = ctype(k.body[val].dtype);
    s += p.staged[o] ? str_cat("    ", t, "* __restrict d", o, " = a->stream ? w", o, " : out", o,
                               " + ob;\n")
                     : str_cat("    ", t, "* __restrict d", o, " = out", o, " + ob;\n");
  }
  s += row_values(k, p, 0);
  const std::vector<uint8_t> general(k.body.size(), 0);
  const int split = ne.flag < 0 ? p.passes : ne.stage;
  for (int pass = 0; pass < split; ++pass)
    s += pass_text(k, p, pass, general) + row_values(k, p, pass + 1);
  if (ne.flag >= 0)
    s += str_cat("    if (", v(ne.flag), ") {\n") + indent(tail_text(k, p, split, ne.exps)) +
         "    } else {\n" + indent(tail_text(k, p, split, general)) + "    }\n";
  else
    s += tail_text(k, p, split, general);
  return s + row_step_text(n_in) + "  }\n  if (a->stream) kiln_stream_fence();\n}\n\n";
}

}  // namespace kiln::jit::detail
