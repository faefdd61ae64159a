#include "jit_ir.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "kiln/half.h"

namespace kiln::jit {
namespace {

constexpr int kMaxRank = 16;

std::string constant_text(DType dt, uint64_t bits) {
  if (dt == DType::kFloat32) return str_cat(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  if (dt == DType::kFloat64) return str_cat(std::bit_cast<double>(bits));
  if (dt == DType::kBool) return bits ? "true" : "false";
  if (dt == DType::kFloat16) return str_cat(to_float(Half{static_cast<uint16_t>(bits)}));
  if (dt == DType::kBFloat16) return str_cat(to_float(BFloat16{static_cast<uint16_t>(bits)}));
  return str_cat(static_cast<int64_t>(bits));
}

std::string value_text(const Instr& in) {
  const auto v = [](int32_t x) { return str_cat("%", x); };
  switch (in.kind) {
    case Instr::kLoad: return str_cat("load in", in.a);
    case Instr::kConst: return str_cat("const ", constant_text(in.dtype, in.bits));
    case Instr::kApply: {
      std::string s = str_cat(op_def(in.op).type_name, "(", v(in.a));
      if (in.b >= 0) s += str_cat(", ", v(in.b));
      if (in.c >= 0) s += str_cat(", ", v(in.c));
      return s + ")";
    }
    case Instr::kCast: return str_cat("cast(", v(in.a), ")");
    case Instr::kSelect: return str_cat("select(", v(in.a), ", ", v(in.b), ", ", v(in.c), ")");
    case Instr::kReduce:
      return str_cat("reduce ", op_def(in.op).type_name, "(", v(in.a), ") from ",
                     constant_text(in.dtype, in.bits));
  }
  return "?";
}

// The binary functions a kReduce may fold with.
bool is_fold(OpId op) {
  return op == OpId::Add || op == OpId::Mul || op == OpId::Maximum || op == OpId::Minimum ||
         op == OpId::LogicalOr || op == OpId::LogicalAnd;
}

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += str_cat(i ? "," : "", d[i] < 0 ? "?" : str_cat(d[i]));
  return s + "]";
}

}  // namespace

bool supported_dtype(DType dt) {
  switch (dt) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kComplex64:  // elementwise only: no constants or reductions
    case DType::kComplex128: return true;
    default: return false;
  }
}

bool halves_only_move(std::span<const Instr> body, size_t from) {
  for (size_t i = from; i < body.size(); ++i) {
    const Instr& in = body[i];
    if (in.kind == Instr::kLoad || in.kind == Instr::kConst || in.kind == Instr::kCast) continue;
    if (is_half(in.dtype)) return false;
    for (int32_t a : {in.a, in.b, in.c})
      if (a >= 0 && static_cast<size_t>(a) < body.size() &&
          is_half(body[static_cast<size_t>(a)].dtype))
        return false;
  }
  return true;
}

bool no_complex_constants(std::span<const Instr> body, size_t from) {
  for (size_t i = from; i < body.size(); ++i)
    if (is_complex(body[i].dtype) &&
        (body[i].kind == Instr::kConst || body[i].kind == Instr::kReduce))
      return false;
  return true;
}

std::string Kernel::to_string() const {
  std::string s = str_cat("kernel ", name, " over ", dims_text(dims));
  if (reduced) s += str_cat(" reducing the last ", reduced);
  s += " {\n";
  for (size_t i = 0; i < inputs.size(); ++i)
    s += str_cat("  in", i, ": ", dtype_name(inputs[i]), dims_text(input_dims[i]), "\n");
  for (size_t i = 0; i < body.size(); ++i) {
    s += str_cat("  %", i, " = ", dtype_name(body[i].dtype), " ", value_text(body[i]));
    if (i < origin.size() && !origin[i].empty()) s += str_cat("    // ", origin[i]);
    s += "\n";
  }
  s += "  out:";
  for (size_t i = 0; i < outputs.size(); ++i) s += str_cat(i ? "," : "", " %", outputs[i]);
  return s + "\n}\n";
}

std::vector<uint8_t> Kernel::per_row() const {
  std::vector<uint8_t> row(body.size(), 0);
  if (reduced == 0) return row;
  for (size_t i = 0; i < body.size(); ++i) {
    const Instr& in = body[i];
    switch (in.kind) {
      case Instr::kLoad: {
        const auto& d = input_dims[static_cast<size_t>(in.a)];
        row[i] = std::all_of(d.end() - reduced, d.end(), [](int64_t x) { return x == 1; });
        break;
      }
      case Instr::kConst:
      case Instr::kReduce: row[i] = 1; break;
      default:
        row[i] = 1;
        for (int32_t a : {in.a, in.b, in.c})
          if (a >= 0 && !row[static_cast<size_t>(a)]) row[i] = 0;
    }
  }
  return row;
}

std::string Kernel::problem() const {
  const auto n = [](size_t x) { return static_cast<int64_t>(x); };
  if (rank < 0 || rank > kMaxRank || reduced < 0 || reduced > rank) return "rank or reduced dims";
  if (n(dims.size()) != rank || input_dims.size() != inputs.size()) return "dims";
  if (std::any_of(dims.begin(), dims.end(), [](int64_t x) { return x < -1; }))
    return "the space's dims";
  for (const auto& d : input_dims)
    if (n(d.size()) != rank || std::any_of(d.begin(), d.end(), [](int64_t x) { return x < -1; }))
      return "an input's dims";
  for (DType dt : inputs)
    if (!supported_dtype(dt)) return "input dtype";
  // Each input has all of the reduced dims or none (unknown sizes are the
  // space's: the runtime checks them).
  for (const auto& in : input_dims) {
    const auto tail = std::span<const int64_t>(in).last(static_cast<size_t>(reduced));
    const auto space = std::span<const int64_t>(dims).last(static_cast<size_t>(reduced));
    if (!std::equal(tail.begin(), tail.end(), space.begin()) &&
        !std::all_of(tail.begin(), tail.end(), [](int64_t x) { return x == 1; }))
      return "an input has part of the reduced dims";
  }
  for (size_t i = 0; i < body.size(); ++i) {
    const Instr& in = body[i];
    if (!supported_dtype(in.dtype)) return str_cat("instruction ", i, " dtype");
    for (int32_t a : {in.a, in.b, in.c})
      if (a < -1 || (in.kind != Instr::kLoad && a >= static_cast<int32_t>(i)))
        return str_cat("instruction ", i, " refers forward");
    const int arity = in.arity();
    const bool ok = in.kind == Instr::kLoad
                        ? in.a >= 0 && in.a < static_cast<int32_t>(inputs.size())
                    : in.kind == Instr::kConst  ? arity == 0
                    : in.kind == Instr::kApply  ? arity >= 1 && in.op < OpId::kNumOps
                    : in.kind == Instr::kCast   ? arity == 1
                    : in.kind == Instr::kReduce ? arity == 1 && reduced > 0 && is_fold(in.op)
                                                : in.kind == Instr::kSelect && arity == 3;
    if (!ok) return str_cat("instruction ", i, " arguments");
  }
  if (!halves_only_move(body, 0)) return "arithmetic on a 16-bit float";
  if (!no_complex_constants(body, 0)) return "a complex constant or reduction";
  for (int32_t v : outputs)
    if (v < 0 || v >= static_cast<int32_t>(body.size())) return "output value";
  return {};
}

int32_t LowerContext::push(Instr::Kind kind, DType dtype, OpId op, int32_t a, int32_t b,
                           int32_t c) {
  Instr in;
  in.kind = kind;
  in.dtype = dtype;
  in.op = op;
  in.a = a;
  in.b = b;
  in.c = c;
  body_.push_back(in);
  return static_cast<int32_t>(body_.size() - 1);
}

int32_t LowerContext::apply(OpId op, DType dtype, int32_t a, int32_t b, int32_t c) {
  return push(Instr::kApply, dtype, op, a, b, c);
}

int32_t LowerContext::cast(int32_t v, DType to) {
  return value_dtype(v) == to ? v : push(Instr::kCast, to, OpId::kNumOps, v, -1, -1);
}

int32_t LowerContext::select(int32_t cond, int32_t x, int32_t y) {
  return push(Instr::kSelect, value_dtype(x), OpId::kNumOps, cond, x, y);
}

int32_t LowerContext::constant_bits(uint64_t bits, DType dtype) {
  Instr in;
  in.kind = Instr::kConst;
  in.dtype = dtype;
  in.bits = bits;
  body_.push_back(in);
  return static_cast<int32_t>(body_.size() - 1);
}

int32_t LowerContext::reduce(OpId combine, int32_t v, uint64_t init, int dims) {
  reduced_ = reduced_ == 0 || reduced_ == dims ? dims : -1;
  const int32_t r = push(Instr::kReduce, value_dtype(v), combine, v, -1, -1);
  body_[static_cast<size_t>(r)].bits = init;
  return r;
}

int32_t LowerContext::constant(double v, DType dtype) {
  return constant_bits(bits_of(v, dtype), dtype);
}

uint64_t bits_of(double v, DType dt) {
  switch (dt) {
    case DType::kFloat32: return std::bit_cast<uint32_t>(static_cast<float>(v));
    case DType::kFloat64: return std::bit_cast<uint64_t>(v);
    case DType::kFloat16: return to_half(static_cast<float>(v)).bits;
    case DType::kBFloat16: return to_bfloat16(static_cast<float>(v)).bits;
    case DType::kBool: return v != 0;
    default: return static_cast<uint64_t>(static_cast<int64_t>(v));
  }
}

void LowerContext::set_output(size_t i, int32_t v) {
  out_.at(i) = v;
}

bool lower_functor(LowerContext& c) {
  const int32_t a = c.input(0);
  const int32_t b = c.num_inputs() > 1 ? c.input(1) : -1;
  const int32_t d = c.num_inputs() > 2 ? c.input(2) : -1;
  c.set_output(0, c.apply(c.op().id, c.out_dtype(0), a, b, d));
  return true;
}

bool lower_identity(LowerContext& c) {
  c.set_output(0, c.input(0));
  return true;
}

uint64_t lowest_bits(DType dt) {
  switch (dt) {
    case DType::kBool: return 0;
    case DType::kInt8: return static_cast<uint64_t>(int64_t{-128});
    case DType::kUInt8: return 0;
    case DType::kInt32: return static_cast<uint64_t>(int64_t{INT32_MIN});
    case DType::kInt64: return static_cast<uint64_t>(INT64_MIN);
    case DType::kFloat32: return std::bit_cast<uint32_t>(-std::numeric_limits<float>::infinity());
    case DType::kFloat64: return std::bit_cast<uint64_t>(-std::numeric_limits<double>::infinity());
    case DType::kFloat16: return 0xfc00;
    case DType::kBFloat16: return 0xff80;
    default: throw InternalError(str_cat("jit: no lowest value for ", dtype_name(dt)));
  }
}

uint64_t highest_bits(DType dt) {
  switch (dt) {
    case DType::kBool: return 1;
    case DType::kInt8: return 127;
    case DType::kUInt8: return 255;
    case DType::kInt32: return INT32_MAX;
    case DType::kInt64: return INT64_MAX;
    case DType::kFloat32: return std::bit_cast<uint32_t>(std::numeric_limits<float>::infinity());
    case DType::kFloat64: return std::bit_cast<uint64_t>(std::numeric_limits<double>::infinity());
    case DType::kFloat16: return 0x7c00;
    case DType::kBFloat16: return 0x7f80;
    default: throw InternalError(str_cat("jit: no highest value for ", dtype_name(dt)));
  }
}

int trailing_axes(const Shape& shape, std::span<const int64_t> axes) {
  if (!shape.rank_known() || axes.empty()) return 0;
  const int64_t r = shape.rank();
  std::vector<bool> hit(static_cast<size_t>(r));
  for (int64_t a : axes) {
    const int64_t x = a < 0 ? a + r : a;
    if (x < 0 || x >= r || hit[static_cast<size_t>(x)]) return 0;
    hit[static_cast<size_t>(x)] = true;
  }
  const int64_t k = static_cast<int64_t>(axes.size());
  bool unknown = false;
  for (int64_t d = r - k; d < r; ++d) {
    if (!hit[static_cast<size_t>(d)]) return 0;
    unknown |= shape.dim(static_cast<int>(d)) < 0;
  }
  return unknown && k == r ? 0 : static_cast<int>(k);
}

View whole_view(int64_t rank) {
  View v;
  v.start.assign(static_cast<size_t>(rank), 0);
  for (int64_t d = 0; d < rank; ++d) v.dims.push_back({d, 1, -1});
  return v;
}

bool composes(const View& inner, const View& outer) {
  for (size_t k = 0; k < inner.dims.size(); ++k) {
    const ViewDim& d = inner.dims[k];
    if (!is_rest(d.size) || d.size == rest_of_dim(0)) continue;
    bool read_to_end = false;
    for (const ViewDim& o : outer.dims)
      if (o.src == static_cast<int64_t>(k)) read_to_end = o.size < 0 && o.step == 1;
    if (!read_to_end) return false;
  }
  return true;
}

bool reads_columns(const View& v, std::span<const int64_t> src) {
  const size_t rank = src.size();
  if (rank == 0 || v.dims.size() != rank || v.start.size() != rank) return false;
  for (size_t d = 0; d < rank; ++d) {
    const ViewDim& x = v.dims[d];
    if (x.src != static_cast<int64_t>(d) || x.step != 1 || v.start[d] < 0) return false;
    // All of the dim, or from 0 a count that is all of it (unknown: checked
    // against the dims at run time).
    const bool whole =
        x.size == -1 || (v.start[d] == 0 && (src[d] < 0 ? x.size >= 0 : x.size == src[d]));
    if (d + 1 < rank && !whole) return false;
  }
  return true;
}

View compose(const View& inner, const View& outer) {
  View r;
  r.start = inner.start;
  // Inner value dims the outer view starts into (or fixes) move the start.
  for (size_t k = 0; k < outer.start.size() && k < inner.dims.size(); ++k) {
    const ViewDim& d = inner.dims[k];
    if (d.src >= 0) r.start[static_cast<size_t>(d.src)] += d.step * outer.start[k];
  }
  for (const ViewDim& o : outer.dims) {
    const ViewDim* d = o.src >= 0 ? &inner.dims[static_cast<size_t>(o.src)] : nullptr;
    if (!d || d->src < 0) {
      r.dims.push_back({-1, 1, 1});  // a new dim, or one walking a new dim (size 1)
      continue;
    }
    if (o.size == -1) {
      r.dims.push_back(*d);        // all of the inner dim
    } else if (is_rest(o.size)) {  // the rest of the inner dim (step 1)
      const int64_t from = outer.start[static_cast<size_t>(o.src)];
      if (d->size >= 0)
        r.dims.push_back({d->src, d->step, view_count(o.size, from, d->size)});
      else  // all or the rest of a dim: the trims add up
        r.dims.push_back({d->src, d->step, rest_of_dim(rest_trim(o.size) + rest_trim(d->size))});
    } else {
      r.dims.push_back({d->src, d->step * o.step, o.size});
    }
  }
  return r;
}

std::string product_dims(const Product& p, const TensorSpec& as, const TensorSpec& bs,
                         int64_t* dims) {
  if ((as.dtype != DType::kFloat32 && as.dtype != DType::kFloat64 &&
       as.dtype != DType::kBFloat16) ||
      bs.dtype != as.dtype)
    return str_cat("a product needs two float32, float64 or bfloat16 operands, not ",
                   dtype_name(as.dtype), " and ", dtype_name(bs.dtype));
  const Shape &a = as.shape, &b = bs.shape;
  const bool batched = b.rank_known() && b.rank() > 2;
  if (!a.rank_known() || !b.rank_known() || a.rank() < 2 || a.rank() > 16 || b.rank() < 2 ||
      (batched ? b.rank() != a.rank() : a.rank() > 2 && p.transpose_a))
    return str_cat("a product of shapes ", a, " and ", b, " is not computed in a kernel");
  const int r = a.rank();
  const int64_t ar = a.dim(r - 2), ac = a.dim(r - 1);
  const int64_t br = b.dim(b.rank() - 2), bc = b.dim(b.rank() - 1);
  const int64_t ka = p.transpose_a ? ar : ac, kb = p.transpose_b ? bc : br;
  bool match = ka < 0 || kb < 0 || ka == kb;
  for (int d = 0; batched && d + 2 < r; ++d)
    match &= a.dim(d) < 0 || b.dim(d) < 0 || a.dim(d) == b.dim(d);
  if (!match) return str_cat("the product's operands ", a, " and ", b, " do not match");
  for (int d = 0; d + 2 < r; ++d) dims[d] = a.dim(d);
  dims[r - 2] = p.transpose_a ? ac : ar;
  dims[r - 1] = p.transpose_b ? br : bc;
  return "";
}

bool ViewQuery::ints(size_t i, SmallVec<int64_t, 8>& out) const {
  const Tensor* v = i < values.size() ? values[i] : nullptr;
  if (!v || (v->dtype() != DType::kInt32 && v->dtype() != DType::kInt64)) return false;
  const int64_t n = v->num_elements();
  out.resize(static_cast<size_t>(n));
  if (v->dtype() == DType::kInt32)
    std::copy_n(v->data<int32_t>(), n, out.data());
  else
    std::copy_n(v->data<int64_t>(), n, out.data());
  return true;
}

}  // namespace kiln::jit
