// The JIT's fused-kernel IR: what a cluster of elementwise ops computes at one
// point of its iteration space, as a list of scalar instructions. It names no
// backend: an instruction applies an op row's scalar function (the C++ emitter
// writes `kiln::fn::<TypeName>`; a CUDA emitter could map the same names), so
// the C++ emitter in src/jit/ and any later one share it.
//
// Each op row's lowering (OpDef::jit) builds its instructions through a
// LowerContext, next to the row's definition.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/op.h"
#include "kiln/small_vector.h"

namespace kiln::jit {

/// One scalar instruction; its result is value number = its index.
struct Instr {
  enum Kind : uint8_t {
    kLoad,    ///< input `a` of the kernel at the current point (broadcast)
    kConst,   ///< the constant whose bit pattern is `bits` (zero-extended)
    kApply,   ///< `op`'s scalar function (fn::<TypeName>) of values a, b, c
    kCast,    ///< value a converted to `dtype` (TensorFlow's Cast rules)
    kSelect,  ///< a ? b : c, a bool
    /// `op`'s binary function folded over value a along the kernel's reduced
    /// dims, starting from the value whose bit pattern is `bits`; the result
    /// is one value per row (see Kernel::reduced).
    kReduce,
  };
  Kind kind = kLoad;
  DType dtype = DType::kInvalid;  ///< the result's dtype
  OpId op = OpId::kNumOps;        ///< kApply only
  int32_t a = -1, b = -1, c = -1;
  uint64_t bits = 0;  ///< kConst only

  int arity() const { return a < 0 ? 0 : b < 0 ? 1 : c < 0 ? 2 : 3; }
};

/// A fused kernel: inputs broadcast to one iteration space of `rank` dims,
/// instructions evaluated at each point, outputs written densely.
struct Kernel {
  std::string name;  ///< symbol name in the generated code
  int rank = 0;      ///< rank of the iteration space
  /// The number of trailing dims that kReduce instructions fold (0: none).
  /// Values constant over them are per-row values, computed once per row;
  /// the others are per-point values.
  int reduced = 0;
  std::vector<DType> inputs;  ///< dtypes of the inputs
  /// Each input's static dims aligned right to `rank` (1 = broadcast, -1 =
  /// unknown): what the emitter specializes the inner loop for.
  std::vector<std::vector<int64_t>> input_dims;
  /// Per input read through a view: its strides per aligned dim as static
  /// dims predict them (unknown source dims taken as 2); empty for an input
  /// read as it is. The emitter's layout prediction only, not encoded.
  std::vector<std::vector<int64_t>> input_strides;
  std::vector<int64_t> dims;  ///< the iteration space's static dims (-1 unknown)
  std::vector<Instr> body;
  std::vector<int32_t> outputs;  ///< value numbers written out
  /// One line per instruction, the op that made it ("Exp 'exp_1'").
  std::vector<std::string> origin;

  /// Per value: 1 when it is constant over the reduced dims (a per-row
  /// value: constants, reductions, loads of inputs with all reduced dims 1,
  /// and what is computed from those alone). All 0 when nothing is reduced.
  std::vector<uint8_t> per_row() const;

  /// Readable listing (the "hlo" stage of experimental_get_compiler_ir).
  std::string to_string() const;
  /// The IR's verifier: an empty string, or what is malformed (a value read
  /// before it is made, an arity, a dtype the kernels do not handle, ...).
  /// The JIT runs it after each stage when Config::verify_graphs is set.
  std::string problem() const;
};

/// Whether the JIT's kernels handle `dt` (bool, integers, float16/bfloat16,
/// float32/64).
bool supported_dtype(DType dt);
/// Whether float16/bfloat16 values from instruction `from` on are only
/// loaded, constant, cast and stored: ops compute them in float32 (their rows
/// are kHalfInFloat, so graphs hold the casts), and kernels do the same.
bool halves_only_move(std::span<const Instr> body, size_t from);
/// Whether no instruction from `from` on is a complex constant or reduction:
/// complex values are computed point by point only (an instruction's 64
/// bits hold no complex128 starting value; complex sums stay kernel calls).
bool no_complex_constants(std::span<const Instr> body, size_t from);

/// What a row's lowering sees: the call's attrs, its inputs as values, and
/// where its outputs go.
class LowerContext : public OpCall {
 public:
  LowerContext(const OpDef& op, const Attrs& attrs, std::span<const TensorSpec> inputs,
               std::span<const TensorSpec> outputs, std::span<const int32_t> in_values,
               std::vector<Instr>& body)
      : OpCall(op, attrs), inputs_(inputs), outputs_(outputs), in_(in_values), body_(body) {}

  size_t num_inputs() const { return inputs_.size(); }
  DType dtype(size_t i) const { return inputs_[i].dtype; }
  DType out_dtype(size_t i) const { return outputs_[i].dtype; }
  int32_t input(size_t i) const { return in_[i]; }

  /// Emits an instruction and returns its value number.
  int32_t apply(OpId op, DType dtype, int32_t a, int32_t b = -1, int32_t c = -1);
  int32_t cast(int32_t v, DType to);
  int32_t select(int32_t cond, int32_t x, int32_t y);
  int32_t constant(double v, DType dtype);
  /// The constant whose bit pattern is `bits` (zero-extended).
  int32_t constant_bits(uint64_t bits, DType dtype);
  /// `combine` folded over v along the last `dims` dims of this op's input 0
  /// (which must be the kernel's space), from the value with bit pattern
  /// `init`. Every reduction of one lowering folds the same dims.
  int32_t reduce(OpId combine, int32_t v, uint64_t init, int dims);
  const TensorSpec& spec(size_t i) const { return inputs_[i]; }
  DType value_dtype(int32_t v) const { return body_[static_cast<size_t>(v)].dtype; }

  /// Sets output i (every output must be set).
  void set_output(size_t i, int32_t v);
  std::span<const int32_t> results() const { return out_; }
  /// The trailing dims this lowering's reductions fold (0: none; -1: they
  /// disagreed, so the node cannot be compiled).
  int reduced() const { return reduced_; }

 private:
  int32_t push(Instr::Kind kind, DType dtype, OpId op, int32_t a, int32_t b, int32_t c);

  std::span<const TensorSpec> inputs_, outputs_;
  std::span<const int32_t> in_;
  std::vector<Instr>& body_;
  std::vector<int32_t> out_ = std::vector<int32_t>(outputs_.size(), -1);
  int reduced_ = 0;
};

/// The lowering of a row whose scalar function is fn::<TypeName> over all of
/// its inputs (unary.def, binary.def): output 0 = op(inputs...).
bool lower_functor(LowerContext& c);
/// Output 0 = input 0 (Identity, StopGradient).
bool lower_identity(LowerContext& c);

/// A value read in place from a source tensor (a transpose, a slice, a split
/// part): value dim j walks the source's dim dims[j].src from start[src] in
/// steps of dims[j].step, dims[j].size times. Source dims no value dim walks
/// are fixed at their start (an index, as x[2]).
struct ViewDim {
  int64_t src = -1;  ///< the source dim walked; -1: a new dim of size 1
  int64_t step = 1;  ///< non-zero
  /// The count; -1: all of the source dim (start 0, step 1); -2 - t (a
  /// source dim of unknown size, step 1): from start to the dim's end less
  /// its last t values, none when that is negative (x[:, 1:], x[:, :-1]).
  int64_t size = -1;
};
/// Size field of a view dim reading a source dim from its start to its end
/// less `trim` values (ViewDim::size).
inline int64_t rest_of_dim(int64_t trim) {
  return -2 - trim;
}
/// Whether a size field reads to the end of a dim of unknown size.
inline bool is_rest(int64_t size) {
  return size <= -2;
}
/// The values at its dim's end a rest size field leaves out (0 otherwise).
inline int64_t rest_trim(int64_t size) {
  return is_rest(size) ? -2 - size : 0;
}
/// The values a view dim of size field `size` reads of a source dim of `n`
/// values (n >= 0) from `start`.
inline int64_t view_count(int64_t size, int64_t start, int64_t n) {
  if (size >= 0) return size;
  if (size == -1) return n;
  const int64_t c = n - start - rest_trim(size);
  return c > 0 ? c : 0;
}
struct View {
  std::vector<int64_t> start;  ///< per source dim: the first index read
  std::vector<ViewDim> dims;   ///< per value dim
};
/// The view reading every dim of a rank-`rank` source as it is; rules edit it.
View whole_view(int64_t rank);
/// The view reading through `inner` what `outer` reads of inner's value (a
/// slice of a transpose, say): one view of inner's source.
View compose(const View& inner, const View& outer);
/// Whether compose(inner, outer) keeps every bound: false when `outer` reads
/// part of (or one index of) an inner dim that is the rest of a dim less
/// values at its end, which the composed view could not check.
bool composes(const View& inner, const View& outer);
/// Whether `v` reads runs of the columns of whole rows of a source of dims
/// `src` (-1: unknown, where a count from 0 is taken as the whole dim): every
/// dim but the last whole and in order, the last a run of the source's last
/// dim in steps of 1 (a Split of a product's columns, as an LSTM's gates).
/// Row r of such a value is row r of its source.
bool reads_columns(const View& v, std::span<const int64_t> src);
/// What a row's view rule (OpDef::jit_view) sees of its node.
struct ViewQuery {
  const OpDef& op;
  const Attrs& attrs;
  std::span<const TensorSpec> inputs, outputs;
  std::span<const Tensor* const> values;  ///< per input: its constant value, or nullptr
  size_t output;                          ///< the output whose view is asked for

  /// Input i's constant value as int64s (int32/int64), if known.
  bool ints(size_t i, SmallVec<int64_t, 8>& out) const;
};

/// A row's output computed by the kernel that reads it (OpDef::jit_product):
/// op(input 0) x op(input 1), op transposing the last two dims when set.
/// Input 1 has rank 2 (input 0's leading dims then fold into the product's
/// rows; input 0 is not transposed when it has more than 2) or input 0's
/// rank and batch dims (one product per batch). The kernel computes the
/// product's rows block by block and runs its instructions over each block
/// while it is in cache.
struct Product {
  bool transpose_a = false, transpose_b = false;
};
/// The dims of product `p` of operands `a` and `b` (unknown dims stay
/// unknown) into dims[0, a.shape.rank()) (at most 16); an empty string, or why
/// the operands do not fit (dtypes other than float32/64 or bfloat16, ranks, inner
/// or batch dims).
std::string product_dims(const Product& p, const TensorSpec& a, const TensorSpec& b, int64_t* dims);

/// One folded output of a JitKernel node (Program::folds).
struct Fold {
  int64_t output = 0;        ///< the kernel output folded
  OpId combine = OpId::Add;  ///< Add, Mul, Maximum or Minimum
  /// The dims folded (>= 1), after the `outer` dims kept before them; all
  /// of the space's dims: a full fold.
  int64_t dims = 1;
  bool mean = false;      ///< divided by the count afterwards
  bool keepdims = false;  ///< the folded dims stay as 1s
  uint64_t init = 0;      ///< the starting value's bit pattern (of the output's dtype)
  /// The leading dims kept before the folded ones (a global average pool's
  /// N before H, W); at least one dim is then kept after them too.
  int64_t outer = 0;
};
/// Whether an output of dtype `dt` can be folded (floats accumulate in
/// float64, int32/int64 in 64-bit integers).
inline bool foldable(DType dt) {
  return dt == DType::kFloat32 || dt == DType::kFloat64 || dt == DType::kInt32 ||
         dt == DType::kInt64;
}

/// The bit pattern of v converted to `dt` (as a constant of that dtype).
uint64_t bits_of(double v, DType dt);
/// The bit patterns of a reduction's starting value for `dt`: the lowest
/// value (-inf for floats; Max) and the highest (+inf; Min).
uint64_t lowest_bits(DType dt);
uint64_t highest_bits(DType dt);
/// The number of trailing dims `axes` (an op's attribute, negative from the
/// end) name in a value of `shape`, when they are exactly its last dims; 0
/// otherwise (the reduction cannot be compiled). Reduced dims of unknown size
/// need a dim kept before them (rows to split over threads; a row kernel then
/// takes N at run time); a reduction of every dim folds instead (fold.h).
int trailing_axes(const Shape& shape, std::span<const int64_t> axes);

}  // namespace kiln::jit
