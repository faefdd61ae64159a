// Row kernels: a fused kernel whose reductions fold the last dims of its
// space. Each row runs in passes over its N points (N static): pass p feeds
// the reductions whose operands need the results of p earlier reductions and
// writes the per-point outputs available then; per-row values are computed
// once between passes. A row of a few KB stays in L1 across the passes, so
// memory traffic is one read of the inputs and one write of the outputs.
// Reductions keep 16 independent accumulators (the order the eager reduce
// kernel uses for rows); `omp simd` on the lane loop keeps GCC from unrolling
// it before vectorizing (a max fold stayed scalar otherwise). A costly
// per-point value that a later pass needs again (softmax's exp) is kept in a
// row buffer instead of being recomputed: the row of the output that pass
// writes over it when there is one, else a stack buffer. Rows pipeline:
// pass 0 of the next row (its first read from memory) runs inside pass 1 of
// this one (NextRow). With `stream` set (large outputs), each row is
// computed into a stack buffer and written with non-temporal stores.
#include <algorithm>
#include <functional>
#include <set>

#include "jit/codegen/emit_util.h"
#include "jit/codegen/stages.h"
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
  std::vector<int32_t> home;    // per kept value: the output whose row holds it, or -1
  std::vector<uint8_t> staged;  // per output: a row buffer to stream from
  bool pipe = false;            // rows pipelined (NextRow)
  int passes = 0;
  int64_t n = 1;  // points per row
};

// Whether point value i is costly enough to keep rather than recompute: at
// least `least` per-point instructions (softmax's exp(x - max) is two; one
// is cheaper to recompute than to store and load).
bool costly(const Kernel& k, const Plan& p, size_t i, int least) {
  int count = 0;
  std::vector<size_t> stack{i};
  std::set<size_t> seen;
  while (!stack.empty()) {
    const size_t j = stack.back();
    stack.pop_back();
    const Instr& in = k.body[j];
    if (!seen.insert(j).second || p.row[j] || in.kind == Instr::kLoad) continue;
    if (++count >= least) return true;
    for (int32_t a : {in.a, in.b, in.c})
      if (a >= 0) stack.push_back(static_cast<size_t>(a));
  }
  return false;
}

// The passes after value i's own that read it.
std::set<int> later_readers(const Kernel& k, const Plan& p, size_t i) {
  std::set<int> passes;
  for (size_t j = i + 1; j < k.body.size(); ++j) {
    const Instr& u = k.body[j];
    if (u.kind == Instr::kReduce || p.row[j] || p.stage[j] <= p.stage[i]) continue;
    const auto x = static_cast<int32_t>(i);
    if (u.a == x || u.b == x || u.c == x) passes.insert(p.stage[j]);
  }
  return passes;
}

// An output row that can hold kept value i until the one later pass that
// reads it, which writes that output over it point by point (softmax's exps,
// scaled in place): same dtype, not taken. -1 if none.
int32_t home_of(const Kernel& k, const Plan& p, size_t i, const std::set<int>& readers,
                const std::vector<uint8_t>& taken) {
  if (readers.size() != 1) return -1;
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const auto out = static_cast<size_t>(k.outputs[o]);
    if (!taken[o] && !p.row[out] && out != i && p.stage[out] == *readers.begin() &&
        k.body[out].dtype == k.body[i].dtype)
      return static_cast<int32_t>(o);
  }
  return -1;
}

// Row buffers on the stack, while it allows: costly point values a later
// pass reads (spill; in an output's row where home_of finds one), then
// per-point outputs to stream from (staged).
void choose_buffers(const Kernel& k, Plan& p) {
  int64_t stack = 0;
  auto fits = [&](DType dt) {
    if (p.n < 0) return false;  // N known at run time: no stack row buffers
    const int64_t bytes = p.n * static_cast<int64_t>(dtype_size(dt));
    if (bytes > kMaxSpillBytes || stack + bytes > kMaxStackBytes) return false;
    stack += bytes;
    return true;
  };
  p.spill.assign(k.body.size(), 0);
  p.home.assign(k.body.size(), -1);
  std::vector<uint8_t> taken(k.outputs.size(), 0);
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Instr& in = k.body[i];
    const bool value = in.kind != Instr::kLoad && in.kind != Instr::kConst &&
                       in.kind != Instr::kReduce && !p.row[i];
    if (!value) continue;
    // Pass 0 keeps only values of 4+ instructions when rows could pipeline
    // (which a value kept by pass 0 rules out): recomputing x * 2 + b in pass
    // 1 costs less than the lost overlap.
    const std::set<int> readers = later_readers(k, p, i);
    if (readers.empty() || !costly(k, p, i, p.pipe && p.stage[i] == 0 ? 4 : 2)) continue;
    p.home[i] = home_of(k, p, i, readers, taken);
    if (p.home[i] >= 0) taken[static_cast<size_t>(p.home[i])] = 1;
    p.spill[i] = p.home[i] >= 0 || fits(in.dtype);
  }
  for (int32_t o : k.outputs)
    p.staged.push_back(!p.row[static_cast<size_t>(o)] &&
                       fits(k.body[static_cast<size_t>(o)].dtype));
}

Plan plan(const Kernel& k, bool allow_pipe = true) {
  Plan p;
  p.row = k.per_row();
  p.stage.assign(k.body.size(), 0);
  for (int d = k.rank - k.reduced; d < k.rank; ++d)
    p.n = p.n < 0 || k.dims[static_cast<size_t>(d)] < 0 ? -1 : p.n * k.dims[static_cast<size_t>(d)];
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
  p.pipe = allow_pipe && p.passes >= 2;
  for (int32_t o : k.outputs)
    if (!p.row[static_cast<size_t>(o)] && p.stage[static_cast<size_t>(o)] == 0) p.pipe = false;
  choose_buffers(k, p);
  for (size_t i = 0; i < k.body.size(); ++i)
    if (p.spill[i] && p.stage[i] == 0) p.pipe = false;
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

// The row buffer of kept value i: its own s<i>, or its home output's d<o>.
std::string buffer(const Plan& p, size_t i) {
  return p.home[i] >= 0 ? str_cat("d", p.home[i]) : str_cat("s", i);
}

// One point's statements (index j) and the writes of this pass; values are
// named with `val` and inputs read through pointers named with `ptr` (the
// next row's pass 0 uses "n" and "q").
std::string point_body(const Kernel& k, const Plan& p, int pass, const std::vector<uint8_t>& need,
                       const std::vector<uint8_t>& fast, const std::string& ind,
                       const char* val = "v", const char* ptr = "p") {
  std::string s;
  for (size_t i = 0; i < k.body.size(); ++i) {
    if (!need[i]) continue;
    const Instr& in = k.body[i];
    const auto x = static_cast<int32_t>(i);
    if (in.kind == Instr::kLoad)
      s += str_cat(ind, "const ", ctype(in.dtype), " ", v(x, val), " = ", ptr, in.a, "[j];\n");
    else if (p.spill[i] && p.stage[i] < pass)
      s += str_cat(ind, "const ", ctype(in.dtype), " ", v(x, val), " = ", buffer(p, i), "[j];\n");
    else if (fast[i])
      s += str_cat(ind, "const float ", v(x, val), " = kiln::fn::detail::exp_f32_normal(",
                   v(in.a, val), ");  // ", k.origin[i], ", normal range\n");
    else
      s += ind + statement(k, i, val);
    if (p.spill[i] && p.stage[i] == pass)
      s += str_cat(ind, buffer(p, i), "[j] = ", v(x, val), ";\n");
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const auto out = static_cast<size_t>(k.outputs[o]);
    if (!p.row[out] && p.stage[out] == pass)
      s += str_cat(ind, "d", o, "[j] = ", v(k.outputs[o], val), ";\n");
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

// The reductions pass `pass` folds.
std::vector<int32_t> folds_of(const Kernel& k, const Plan& p, int pass) {
  std::vector<int32_t> folds;
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Instr& in = k.body[i];
    if (in.kind == Instr::kReduce && p.stage[static_cast<size_t>(in.a)] == pass)
      folds.push_back(static_cast<int32_t>(i));
  }
  return folds;
}

// Pipelined rows: pass 0 of row r + 1 (its reductions only) runs inside pass
// 1 of row r, so the next row's first read from memory overlaps this row's
// work on L1-resident data (softmax's exps). Its values are named n<i>, its
// lanes b<f>/u<f>, and its results are carried to the next row in k<f>.
struct NextRow {
  std::vector<int32_t> folds;
  std::vector<uint8_t> need;    // point values
  std::vector<uint8_t> rows;    // per-row values they read
  std::vector<uint8_t> inputs;  // inputs they load
};

NextRow next_row(const Kernel& k, const Plan& p) {
  NextRow next;
  next.folds = folds_of(k, p, 0);
  std::vector<int32_t> roots;
  for (int32_t f : next.folds) roots.push_back(k.body[static_cast<size_t>(f)].a);
  next.need = cone(k, p, 0, roots);
  next.rows.assign(k.body.size(), 0);
  next.inputs.assign(k.inputs.size(), 0);
  std::vector<int32_t> stack;
  for (int32_t r : roots)
    if (p.row[static_cast<size_t>(r)]) stack.push_back(r);  // a fold of a per-row value
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Instr& in = k.body[i];
    if (!next.need[i]) continue;
    if (in.kind == Instr::kLoad) next.inputs[static_cast<size_t>(in.a)] = 1;
    for (int32_t a : {in.a, in.b, in.c})
      if (in.kind != Instr::kLoad && a >= 0 && p.row[static_cast<size_t>(a)]) stack.push_back(a);
  }
  while (!stack.empty()) {
    const auto j = static_cast<size_t>(stack.back());
    stack.pop_back();
    if (next.rows[j]) continue;
    next.rows[j] = 1;
    const Instr& in = k.body[j];
    if (in.kind != Instr::kLoad)
      for (int32_t a : {in.a, in.b, in.c})
        if (a >= 0) stack.push_back(a);
  }
  return next;
}

std::string lanes_text(const Kernel& k, const std::vector<int32_t>& folds, const char* lane,
                       const char* tail) {
  std::string s;
  for (int32_t f : folds) {
    const Instr& in = k.body[static_cast<size_t>(f)];
    s += str_cat("    ", ctype(in.dtype), " ", lane, f, "[", kLanes, "];\n    for (int l = 0; l < ",
                 kLanes, "; ++l) ", lane, f, "[l] = ", literal(in.dtype, in.bits), ";\n    ",
                 ctype(in.dtype), " ", tail, f, " = ", literal(in.dtype, in.bits), ";\n");
  }
  return s;
}

// Each fold's step: into lane `lane`<f>[l], or the tail's own `tail`<f>.
std::string folds_text(const Kernel& k, const std::vector<int32_t>& folds, bool in_lane,
                       const char* lane, const char* tail, const char* val,
                       const std::string& ind) {
  std::string t;
  for (int32_t f : folds) {
    const Instr& in = k.body[static_cast<size_t>(f)];
    const std::string acc = in_lane ? str_cat(lane, f, "[l]") : str_cat(tail, f);
    t += str_cat(ind, acc, " = ", functor(in.op), "(", acc, ", ", v(in.a, val), ");\n");
  }
  return t;
}

// The lanes combined, then the tail: "<result><f> = ...".
std::string combine_text(const Kernel& k, const std::vector<int32_t>& folds, const char* lane,
                         const char* tail, const std::function<std::string(int32_t)>& result) {
  std::string s;
  for (int32_t f : folds) {
    const Instr& in = k.body[static_cast<size_t>(f)];
    s += str_cat("    for (int w = ", kLanes / 2,
                 "; w > 0; w /= 2)\n      for (int l = 0; l < w; ++l) ", lane, f,
                 "[l] = ", functor(in.op), "(", lane, f, "[l], ", lane, f, "[l + w]);\n    ",
                 result(f), " = ", functor(in.op), "(", lane, f, "[0], ", tail, f, ");\n");
  }
  return s;
}

// The comment on a pass's loop with vector code (emit_cpp.cpp's kind_of):
// "short" for rows of a static N below a float32 vector, too few to fill one.
const char* vector_kind(const Plan& p) {
  return p.n >= 0 && p.n < kVectorPoints ? "short" : "vector";
}

// The stages of pass `pass` (stages.h) over its point values `need`: the
// instructions it computes in order, its folds in the last stage.
Stages pass_stages(const Kernel& k, const Plan& p, int pass, const std::vector<uint8_t>& need) {
  const size_t n = k.body.size();
  std::vector<uint8_t> computed(n, 0), last(n, 0);
  for (size_t i = 0; i < n; ++i)
    computed[i] = need[i] && !p.row[i] && k.body[i].kind != Instr::kLoad &&
                  !(p.spill[i] && p.stage[i] < pass);
  for (int32_t f : folds_of(k, p, pass)) last[static_cast<size_t>(f)] = 1;
  return plan_stages(k, computed, last);
}

// The point values of pass `pass` that stage `st` of `sg` computes (index
// j, block buffers at j - b), with the loads, earlier passes' row buffers and
// earlier stages' block buffers they read, and the writes of this stage.
std::string stage_point_body(const Kernel& k, const Plan& p, int pass, const Stages& sg, int st,
                             const std::vector<uint8_t>& fast, const std::string& ind) {
  const size_t n = k.body.size();
  const bool last = st + 1 == sg.count();
  std::vector<uint8_t> want(n, 0);
  auto mark = [&](size_t i) {
    want[i] = 1;
    const Instr& in = k.body[i];
    if (in.kind != Instr::kLoad)
      for (int32_t a : {in.a, in.b, in.c})
        if (a >= 0) want[static_cast<size_t>(a)] = 1;
  };
  for (size_t i = 0; i < n; ++i)
    if (sg.of[i] == st) mark(i);
  for (int32_t o : k.outputs) {
    const auto i = static_cast<size_t>(o);
    if (!p.row[i] && p.stage[i] == pass && sg.of[i] < 0 && last) want[i] = 1;
  }
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    const Instr& in = k.body[i];
    if (!want[i] || p.row[i] || in.kind == Instr::kReduce) continue;
    const auto x = static_cast<int32_t>(i);
    if (in.kind == Instr::kLoad)
      s += str_cat(ind, "const ", ctype(in.dtype), " ", v(x), " = p", in.a, "[j];\n");
    else if (p.spill[i] && p.stage[i] < pass)
      s += str_cat(ind, "const ", ctype(in.dtype), " ", v(x), " = ", buffer(p, i), "[j];\n");
    else if (sg.of[i] >= 0 && sg.of[i] < st)
      s += str_cat(ind, "const ", ctype(in.dtype), " ", v(x), " = blk", i, "[j - b];\n");
    else if (fast[i])
      s += str_cat(ind, "const float ", v(x), " = kiln::fn::detail::exp_f32_normal(", v(in.a),
                   ");  // ", k.origin[i], ", normal range\n");
    else
      s += ind + statement(k, i);
    if (sg.of[i] != st) continue;
    if (sg.carried[i]) s += str_cat(ind, "blk", i, "[j - b] = ", v(x), ";\n");
    if (p.spill[i] && p.stage[i] == pass) s += str_cat(ind, buffer(p, i), "[j] = ", v(x), ";\n");
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const auto out = static_cast<size_t>(k.outputs[o]);
    if (!p.row[out] && p.stage[out] == pass && (sg.of[out] == st || (sg.of[out] < 0 && last)))
      s += str_cat(ind, "d", o, "[j] = ", v(k.outputs[o]), ";\n");
  }
  return s;
}

// Pass `pass` in several stages, over blocks of sg.block points of the row:
// a loop per stage, the last one folding in lanes as a single-stage pass does.
std::string staged_pass_text(const Kernel& k, const Plan& p, int pass, const Stages& sg,
                             const std::vector<uint8_t>& fast) {
  const std::vector<int32_t> folds = folds_of(k, p, pass);
  std::string s = str_cat("    // pass ", pass, " in ", sg.count(), " stages over blocks of ",
                          sg.block, " points\n") +
                  lanes_text(k, folds, "a", "t");
  const std::string c = str_cat("c", pass);
  // Rows of a static N no longer than a block are one block: the loops'
  // bounds are then constants (a loop over b would let GCC warn about
  // iterations past them).
  if (p.n >= 0 && p.n <= sg.block)
    s += "    {\n      constexpr int64_t b = 0, e = N;\n";
  else
    s += str_cat("    for (int64_t b = 0; b < N; b += ", sg.block,
                 ") {\n      const int64_t e = N - b < ", sg.block, " ? N : b + ", sg.block, ";\n");
  for (int st = 0; st < sg.count(); ++st) {
    const char* kind = sg.scalar[static_cast<size_t>(st)] ? "scalar" : vector_kind(p);
    if (st + 1 < sg.count() || folds.empty()) {
      s += str_cat("#pragma omp simd\n      for (int64_t j = b; j < e; ++j) {  // kiln:", kind,
                   "\n") +
           stage_point_body(k, p, pass, sg, st, fast, "        ") + "      }\n";
      continue;
    }
    s += str_cat("      int64_t ", c, " = b;\n      for (; ", c, " + ", kLanes, " <= e; ", c,
                 " += ", kLanes, ") {\n#pragma omp simd\n        for (int64_t l = 0; l < ", kLanes,
                 "; ++l) {  // kiln:", kind, "\n          const int64_t j = ", c, " + l;\n") +
         stage_point_body(k, p, pass, sg, st, fast, "          ") +
         folds_text(k, folds, true, "a", "t", "v", "          ") +
         str_cat("        }\n      }\n      for (; ", c, " < e; ++", c,
                 ") {\n        const int64_t j = ", c, ";\n") +
         stage_point_body(k, p, pass, sg, st, fast, "        ") +
         folds_text(k, folds, false, "a", "t", "v", "        ") + "      }\n";
  }
  s += "    }\n";
  s += combine_text(k, folds, "a", "t", [&](int32_t f) {
    return str_cat("const ", ctype(k.body[static_cast<size_t>(f)].dtype), " ", v(f));
  });
  return s + stream_text(k, p, pass);
}

// What pass `pass` computes at each point: its folds' operands, the values
// it keeps for later passes and the outputs it writes (none: empty).
std::vector<int32_t> pass_roots(const Kernel& k, const Plan& p, int pass) {
  std::vector<int32_t> roots;
  for (int32_t f : folds_of(k, p, pass)) roots.push_back(k.body[static_cast<size_t>(f)].a);
  for (size_t i = 0; i < k.body.size(); ++i)
    if (p.spill[i] && p.stage[i] == pass) roots.push_back(static_cast<int32_t>(i));
  for (int32_t o : k.outputs)
    if (!p.row[static_cast<size_t>(o)] && p.stage[static_cast<size_t>(o)] == pass)
      roots.push_back(o);
  return roots;
}

std::string pass_text(const Kernel& k, const Plan& p, int pass, const std::vector<uint8_t>& fast,
                      const NextRow* next) {
  const std::vector<int32_t> folds = folds_of(k, p, pass);
  const std::vector<int32_t> roots = pass_roots(k, p, pass);
  if (roots.empty() && next == nullptr) return "";
  const std::vector<uint8_t> need = cone(k, p, pass, roots);
  const Stages sg = pass_stages(k, p, pass, need);
  if (next == nullptr && sg.count() > 1) return staged_pass_text(k, p, pass, sg, fast);
  const char* kind = sg.count() == 1 && sg.scalar[0] ? "scalar" : vector_kind(p);
  std::string s = str_cat("    // pass ", pass, next ? ", and pass 0 of the next row" : "", "\n");
  if (folds.empty() && next == nullptr)
    return s + "#pragma omp simd\n    for (int64_t j = 0; j < N; ++j) {  // kiln:" + kind + "\n" +
           point_body(k, p, pass, need, fast, "      ") + "    }\n" + stream_text(k, p, pass);
  s += lanes_text(k, folds, "a", "t");
  const std::vector<uint8_t> general(k.body.size(), 0);
  auto body = [&](bool lane, const std::string& ind) {
    std::string t =
        point_body(k, p, pass, need, fast, ind) + folds_text(k, folds, lane, "a", "t", "v", ind);
    if (next)
      t += point_body(k, p, 0, next->need, general, ind, "n", "q") +
           folds_text(k, next->folds, lane, "b", "u", "n", ind);
    return t;
  };
  if (next) s += lanes_text(k, next->folds, "b", "u");
  const std::string c = str_cat("c", pass);
  s += str_cat("    int64_t ", c, " = 0;\n    for (; ", c, " + ", kLanes, " <= N; ", c,
               " += ", kLanes, ") {\n#pragma omp simd\n      for (int64_t l = 0; l < ", kLanes,
               "; ++l) {  // kiln:", kind, "\n        const int64_t j = ", c, " + l;\n") +
       body(true, "        ") +
       str_cat("      }\n    }\n    for (; ", c, " < N; ++", c, ") {\n      const int64_t j = ", c,
               ";\n") +
       body(false, "      ") + "    }\n";
  s += combine_text(k, folds, "a", "t", [&](int32_t f) {
    return str_cat("const ", ctype(k.body[static_cast<size_t>(f)].dtype), " ", v(f));
  });
  if (next) s += combine_text(k, next->folds, "b", "u", [](int32_t f) { return str_cat("k", f); });
  return s + stream_text(k, p, pass);
}

// Per-row values that become available after `stage` reductions in sequence
// (those in `only` when given), named with `val`; per-row loads read at
// offsets o<k>.
std::string row_values(const Kernel& k, const Plan& p, int stage, const char* val = "v",
                       const std::vector<uint8_t>* only = nullptr) {
  std::string s;
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Instr& in = k.body[i];
    if (!p.row[i] || p.stage[i] != stage || in.kind == Instr::kReduce) continue;
    if (only && !(*only)[i]) continue;
    if (in.kind == Instr::kLoad)
      s += str_cat("    const ", ctype(in.dtype), " ", v(static_cast<int32_t>(i), val), " = in",
                   in.a, "[o", in.a, "];\n");
    else
      s += "    " + statement(k, i, val);
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
std::string tail_text(const Kernel& k, const Plan& p, int from, const std::vector<uint8_t>& fast,
                      const NextRow* next) {
  std::string s;
  for (int pass = from; pass < p.passes; ++pass)
    s += pass_text(k, p, pass, fast, pass == 1 ? next : nullptr) + row_values(k, p, pass + 1);
  for (size_t o = 0; o < k.outputs.size(); ++o)
    if (p.row[static_cast<size_t>(k.outputs[o])])
      s += str_cat("    out", o, "[r] = ", v(k.outputs[o]), ";\n");
  return s;
}

}  // namespace

namespace {

// Row r's input pointers p<k> (inputs that vary along the row) and output
// pointers d<o>.
std::string row_pointers_text(const Kernel& k, const Plan& p) {
  std::string s;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    const auto& d = k.input_dims[i];
    if (std::any_of(d.end() - k.reduced, d.end(), [](int64_t x) { return x != 1; }))
      s += str_cat("    const ", mtype(k.inputs[i]), "* __restrict p", i, " = in", i, " + o", i,
                   ";\n");
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const auto val = static_cast<size_t>(k.outputs[o]);
    if (p.row[val]) continue;
    const char* t = mtype(k.body[val].dtype);
    s += p.staged[o] ? str_cat("    ", t, "* __restrict d", o, " = a->stream ? w", o, " : out", o,
                               " + ob;\n")
                     : str_cat("    ", t, "* __restrict d", o, " = out", o, " + ob;\n");
  }
  return s;
}

// Pipelined rows, once row r's pointers and per-row loads are taken: the
// offsets step to row r + 1 (q<k> is row r again on a block's last row, which
// is in L1), the next row's per-row values, and pass 0, run here for the
// block's first row only.
std::string pipeline_text(const Kernel& k, const Plan& p, const NextRow& next) {
  std::string s = row_step_text(k.inputs.size());
  for (size_t i = 0; i < k.inputs.size(); ++i)
    if (next.inputs[i])
      s += str_cat("    const ", mtype(k.inputs[i]), "* __restrict q", i, " = r + 1 < r1 ? in", i,
                   " + o", i, " : p", i, ";\n");
  s += row_values(k, p, 0, "n", &next.rows) + "    if (r == r0) {\n" +
       indent(pass_text(k, p, 0, std::vector<uint8_t>(k.body.size(), 0), nullptr));
  for (int32_t f : next.folds) s += str_cat("      k", f, " = ", v(f), ";\n");
  s += "    }\n";
  for (int32_t f : next.folds)
    s += str_cat("    const ", ctype(k.body[static_cast<size_t>(f)].dtype), " ", v(f), " = k", f,
                 ";\n");
  return s;
}

}  // namespace

// Per pass, its stages (stages.h).
std::vector<Stages> all_stages(const Kernel& k, const Plan& p) {
  std::vector<Stages> out;
  for (int pass = 0; pass < p.passes; ++pass)
    out.push_back(pass_stages(k, p, pass, cone(k, p, pass, pass_roots(k, p, pass))));
  return out;
}

// The block buffers of the values any pass carries between its stages.
std::string block_buffers_text(const Kernel& k, const std::vector<Stages>& stages) {
  std::vector<int64_t> size(k.body.size(), 0);
  for (const Stages& sg : stages)
    for (size_t i = 0; i < k.body.size(); ++i)
      if (sg.carried[i]) size[i] = std::max(size[i], sg.block);
  std::string s;
  for (size_t i = 0; i < k.body.size(); ++i)
    if (size[i] > 0)
      s += str_cat("  alignas(64) ", mtype(k.body[i].dtype), " blk", i, "[", size[i], "];\n");
  return s;
}

std::string row_kernel_text(const Kernel& kernel) {
  Kernel k = kernel;
  const NormalExp ne = add_normal_exp_check(k);
  Plan p = plan(k);
  std::vector<Stages> stages = all_stages(k, p);
  // A pass in stages leaves no room to pipeline rows (the next row's pass 0
  // would join one stage's loop).
  if (p.pipe &&
      std::any_of(stages.begin(), stages.end(), [](const Stages& sg) { return sg.count() > 1; })) {
    p = plan(k, false);
    stages = all_stages(k, p);
  }
  const size_t n_in = k.inputs.size();
  const bool pipe = p.pipe;
  const NextRow next = pipe ? next_row(k, p) : NextRow{};
  // N static, or the layout's last dim (the reduced dims as one run).
  const std::string n = p.n >= 0 ? str_cat(p.n) : "N (known at run time)";
  std::string s =
      str_cat("// ", k.name, ": ", k.body.size(), " instructions, rows of ", n, " points in ",
              p.passes, " passes", pipe ? ", pipelined" : "", "\n", signature_text(k),
              p.n >= 0 ? str_cat("  constexpr int64_t N = ", p.n, ";\n")
                       : std::string("  const int64_t N = sh[R - 1];\n"));
  for (size_t i = 0; i < k.body.size(); ++i)
    if (p.spill[i] && p.home[i] < 0)
      s += str_cat("  alignas(64) ", mtype(k.body[i].dtype), " s", i, "[N];\n");
  for (size_t o = 0; o < k.outputs.size(); ++o)
    if (p.staged[o])
      s += str_cat("  alignas(64) ", mtype(k.body[static_cast<size_t>(k.outputs[o])].dtype), " w",
                   o, "[N];\n");
  s += block_buffers_text(k, stages);
  for (int32_t f : next.folds)
    s += str_cat("  ", ctype(k.body[static_cast<size_t>(f)].dtype), " k", f, " = ",
                 literal(k.body[static_cast<size_t>(f)].dtype, k.body[static_cast<size_t>(f)].bits),
                 ";\n");
  s += row_start_text(n_in) +
       "  for (int64_t r = r0; r < r1; ++r) {\n    const int64_t ob = r * N;\n" +
       row_pointers_text(k, p) + row_values(k, p, 0);
  const NextRow* nx = pipe ? &next : nullptr;
  const std::vector<uint8_t> general(k.body.size(), 0);
  const int split = ne.flag < 0 ? p.passes : ne.stage;
  int pass = 0;
  if (pipe) s += pipeline_text(k, p, next) + row_values(k, p, ++pass);
  for (; pass < split; ++pass)
    s += pass_text(k, p, pass, general, pass == 1 ? nx : nullptr) + row_values(k, p, pass + 1);
  if (ne.flag >= 0)
    s += str_cat("    if (", v(ne.flag), ") {\n") + indent(tail_text(k, p, split, ne.exps, nx)) +
         "    } else {\n" + indent(tail_text(k, p, split, general, nx)) + "    }\n";
  else
    s += tail_text(k, p, split, general, nx);
  if (!pipe) s += row_step_text(n_in);
  return s + "  }\n  if (a->stream) kiln_stream_fence();\n}\n\n";
}

}  // namespace kiln::jit::detail
