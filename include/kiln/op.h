// The op table: one row per op with its inputs, attributes, traits, shape and
// dtype inference, CPU kernel, and slots for the gradient rule and the JIT
// emitter. Every other layer (eager dispatch, tracing, passes, executor,
// printer) looks ops up here; nothing keeps its own list of ops.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/shape.h"
#include "kiln/tensor.h"

namespace kiln {

enum class OpId : uint16_t {
#define KILN_OP(id, type_name, node_name) id,
#include "kiln/op_list.def"
#undef KILN_OP
  kNumOps
};
constexpr size_t kNumOps = static_cast<size_t>(OpId::kNumOps);

/// Op traits, a bit set.
enum OpTrait : uint32_t {
  kElementwise = 1u << 0,    ///< output[i] depends on input[i] only (after broadcasting)
  kStateful = 1u << 1,       ///< has side effects or reads state: never pruned, folded or merged
  kCommutative = 1u << 2,    ///< binary op with f(a, b) == f(b, a)
  kShapeOnly = 1u << 3,      ///< output depends on input shapes only, not values
  kView = 1u << 4,           ///< output may share the input's buffer (reshape, expand_dims)
  kRandom = 1u << 5,         ///< draws random numbers (also kStateful)
  kNoGradient = 1u << 6,     ///< not differentiable (comparisons, bitwise, argmax)
  kVariadicInput = 1u << 7,  ///< the last declared input takes any number of tensors
  kSource = 1u << 8,  ///< no inputs; the value comes from outside the graph (Placeholder, Const)
  kCall = 1u << 9,    ///< runs its one subgraph attr as a function of its inputs (inlinable)
  /// Made by tracing, by a pass or by a control-flow API (Placeholder, If,
  /// While, fused ops): not offered as a `kiln.raw` op.
  kGraphOnly = 1u << 10,
  kVariadicOutput = 1u << 11,  ///< the number of outputs follows from attrs (Unpack, Split)
  /// Computes float16/bfloat16 inputs in float32: dispatch casts them up, runs
  /// the float32 row and rounds its float32 outputs back (no half kernels).
  kHalfInFloat = 1u << 12,
  /// Cannot run in a jit_compile=True function (strings, host callbacks,
  /// printing): such a function fails at its first call naming these ops.
  kNoJit = 1u << 13,
  /// Made only by an optimization pass (fused ops, compiled kernels, whose
  /// attributes may name code loaded in this process): never traced or
  /// saved, so a loaded graph (a SavedModel) holding one is refused.
  kPassOnly = 1u << 14,
  /// With kHalfInFloat: bfloat16 inputs run on the op's own kernel (float16
  /// ones still in float32). Convolutions: oneDNN's bf16 kernels.
  kNativeBFloat16 = 1u << 15,
};

struct TensorSpec;

/// A step a library call can apply to its result (a oneDNN convolution's
/// post-ops; later matmul's and the JIT's epilogues). A row names its own
/// (OpDef::epilogue); kClip and kSwish are patterns of several ops
/// (Minimum(Relu(y), c), y * Sigmoid(y)).
enum class Epilogue : uint8_t {
  kNone,
  kBiasAdd,    // y + bias[c]
  kMul,        // y * a
  kAdd,        // y + a
  kSub,        // y - a
  kRelu,       // max(y, 0)
  kClip,       // min(max(y, lo), hi)
  kSigmoid,    // 1 / (1 + exp(-y))
  kTanh,       // tanh(y)
  kSwish,      // y * sigmoid(y)
  kHardSwish,  // y * min(max(y + 3, 0), 6) / 6 (a pattern, as kSwish: no op's row)
};

/// A graph-valued attribute: a control-flow body (cond branch, loop body).
/// The function layer implements it over a traced graph and its plan;
/// control-flow kernels run it on concrete tensors.
class Subgraph : public RefCounted {
 public:
  /// The body's name (e.g. "cond_true"), for listings and errors.
  virtual const std::string& name() const = 0;
  virtual std::span<const TensorSpec> input_specs() const = 0;
  virtual std::span<const TensorSpec> output_specs() const = 0;
  /// Runs the body on concrete inputs (thread-safe).
  virtual std::vector<Tensor> run(std::span<const Tensor> inputs) const = 0;
  /// The same, where the caller gives `inputs` up (left unspecified): the
  /// body may then reuse their buffers in place. Outputs go into `out`.
  virtual void run_owned(std::span<Tensor> inputs, std::vector<Tensor>& out) const {
    out = run(inputs);
  }
};

/// A typed, immutable value that a pass makes for a pass-only op (a
/// JitKernel node's compiled program): read by the op's inference and
/// kernel, never saved to or read from a file, equal only to itself.
class AttrObject {
 public:
  virtual ~AttrObject() = default;
  /// A short description for messages ("program kiln_jit_k0: 3 inputs").
  virtual std::string describe() const = 0;
};
using AttrObjectRef = std::shared_ptr<const AttrObject>;

/// Attribute values. Int lists double as shapes (dims, -1 = unknown); tensors
/// are constant values (the Const op's `value`); subgraphs are bodies;
/// objects are what passes hand pass-only ops (AttrObject).
using AttrValue = std::variant<std::monostate, bool, int64_t, double, DType, std::string,
                               std::vector<int64_t>, Tensor, Ref<Subgraph>, AttrObjectRef>;
enum class AttrType : uint8_t {
  kBool = 1,
  kInt,
  kFloat,
  kDType,
  kString,
  kInts,
  kTensor,
  kSubgraph,
  kObject  ///< an AttrObject (pass-only ops)
};

struct AttrDef {
  const char* name;
  AttrType type;
  AttrValue default_value;  ///< monostate = required
};

/// Attributes of one op call, in the order of the op's AttrDefs.
using Attrs = std::vector<AttrValue>;

struct OpDef;
class InferContext;
class KernelContext;

using InferFn = void (*)(InferContext&);
using KernelFn = void (*)(KernelContext&);
/// A gradient rule: builds input gradients from output gradients with kiln
/// ops (so it works eagerly and traced). `grad_inputs` arrives sized to the
/// inputs, all undefined; an input left undefined gets no gradient (integer
/// or shape inputs). `grad_outputs` has one defined tensor per output.
using GradFn = void (*)(const OpDef&, std::span<const Tensor> inputs,
                        std::span<const Tensor> outputs, std::span<const Tensor> grad_outputs,
                        const Attrs& attrs, std::vector<Tensor>& grad_inputs);
/// A float32 elementwise kernel on one block of contiguous values, used by
/// the fused-elementwise kernel: out[i] = f(a[i]) or f(a[i], b[i]).
using BlockFnF32 = void (*)(const float* a, const float* b, float* out, int64_t n);
namespace jit {
class LowerContext;
struct View;
struct ViewQuery;
struct Product;
}  // namespace jit
/// A JIT lowering: emits the row's scalar instructions into the fused-kernel
/// IR (src/jit/ir/jit_ir.h); false when this call cannot be lowered, so it stays
/// a kernel call. A row with a lowering promises broadcast semantics: each
/// output has the broadcast shape of the inputs, point by point.
using JitLowerFn = bool (*)(jit::LowerContext&);
/// How jit_compile reads a row that only moves values (src/jit/fusion/cluster.cpp):
/// kRelabel, the same points in the same order under another shape (Reshape,
/// ExpandDims, Squeeze).
enum class JitIndexMap : uint8_t { kNone, kRelabel };
/// How jit_compile reads an output of a row that picks values of its input 0
/// in place (Transpose, slices, Split, Unstack): fills the strided view
/// (src/jit/ir/jit_ir.h) of output `q.output`; false when it has none (the row
/// stays a kernel call).
using JitViewFn = bool (*)(const jit::ViewQuery& q, jit::View& v);
/// How jit_compile computes a row's output inside the kernel that reads it,
/// block by block of rows, as a matrix product of its inputs 0 and 1
/// (MatMul): fills the transposes (src/jit/ir/jit_ir.h); false when this call
/// is no such product (it stays a kernel call).
using JitProductFn = bool (*)(const jit::ViewQuery& q, jit::Product& p);
namespace onnx {
class ExportContext;
}
/// An ONNX export rule: emits the ONNX nodes computing the row's outputs
/// (src/ops/onnx_export.h; the exporter is src/onnx/). Rows whose ONNX op
/// takes the same inputs and attributes-free form name it instead
/// (OpDef::onnx_type); rows with neither cannot be exported.
using OnnxExportFn = void (*)(onnx::ExportContext&);
namespace tf_import {
class Context;
}
/// A TensorFlow import rule: builds the row's outputs from a node of a graph
/// TensorFlow wrote (a SavedModel's FunctionDef; src/ops/tf_import.h, the
/// importer is src/saved_model/tf_import.cpp). Rows whose TensorFlow op takes
/// the same inputs in the same order, and whose attributes are a subset of
/// TensorFlow's (its type attributes aside), import directly instead
/// (OpDef::tf_direct).
using TfImportFn = void (*)(tf_import::Context&);

/// What one value of a row's scalar function costs in compiled code for
/// operands of dtype `dt` (src/kernels/cpu/functors.h, fn::cost_of): about how
/// many vector instructions a vector of values takes, or -1 where it has no
/// vector code (a libm call, integer division). jit_compile's stage planner
/// reads it (src/jit/).
using JitCostFn = int (*)(DType dt);

/// What a step costs, for the executor's parallel regions.
struct OpCost {
  double work = 0;        ///< element-operations
  bool internal = false;  ///< the kernel already splits its work over the pool
};
/// The sizes a cost rule sees: element counts of the inputs and outputs, the
/// last dimension of output 0, and the pool's grain (elements per task).
struct CostQuery {
  const OpDef& op;
  const Attrs& attrs;
  std::span<const int64_t> in, out;
  int64_t out_inner;
  int64_t grain;
  /// Elements of all inputs, of all outputs (unknown counts as 0).
  int64_t in_elements() const { return sum(in); }
  int64_t out_elements() const { return sum(out); }
  /// The default work: max(in_elements, out_elements).
  double elements() const { return static_cast<double>(std::max(sum(in), sum(out))); }

 private:
  static int64_t sum(std::span<const int64_t> v) {
    int64_t s = 0;
    for (int64_t e : v) s += e > 0 ? e : 0;
    return s;
  }
};
/// A cost rule; rows without one cost max(elements in, elements out) and
/// count as internal above one grain (src/exec/plan_parallel.cpp).
using CostFn = OpCost (*)(const CostQuery&);

struct OpDef {
  OpId id = OpId::kNumOps;
  const char* type_name = "";  ///< TensorFlow's op type, e.g. "AddV2"
  const char* node_name = "";  ///< default node name when traced, e.g. "add"
  std::vector<const char*> inputs;
  std::vector<const char*> outputs;  ///< empty for ops with no outputs (Print)
  std::vector<AttrDef> attrs;
  uint32_t traits = 0;
  InferFn infer = nullptr;
  KernelFn cpu_kernel = nullptr;
  GradFn grad = nullptr;
  /// Loop lowering for jit_compile (src/jit/); rows without one run as kernel
  /// calls inside compiled functions (MatMul, Conv2D) unless kNoJit.
  JitLowerFn jit_lower = nullptr;
  JitIndexMap jit_index_map = JitIndexMap::kNone;
  JitViewFn jit_view = nullptr;
  JitProductFn jit_product = nullptr;
  /// The cost of the row's scalar function in compiled code (bound with its
  /// CPU kernel); rows without one cost 1 per value.
  JitCostFn jit_cost = nullptr;
  /// ONNX export: a rule, or the ONNX op type this row is one-to-one.
  OnnxExportFn onnx = nullptr;
  const char* onnx_type = nullptr;
  /// TensorFlow import: a rule, or a row TensorFlow's op of the same type
  /// name maps onto input for input and attribute for attribute (but for
  /// the inputs and names tf_form lists).
  TfImportFn tf_import = nullptr;
  bool tf_direct = false;
  /// TensorFlow's form of a row that keeps as attributes what TensorFlow's op
  /// takes as inputs: each (TensorFlow input position, -1 for the last; the
  /// attribute; whether an empty list means every axis) is written as a Const
  /// input (SavedModels), and TensorFlow's names of renamed attributes.
  struct TfAttrInput {
    int position;
    const char* attr;
    bool all_axes_if_empty = false;
  };
  std::vector<TfAttrInput> tf_attr_inputs;
  std::vector<std::pair<const char*, const char*>> tf_attr_names;  ///< (TensorFlow's, kiln's)
  /// Set for elementwise ops that the fusion pass may fuse (float32).
  BlockFnF32 block_f32 = nullptr;
  CostFn cost = nullptr;
  /// For ops with subgraph attrs: op input i is input i - body_input_offset
  /// of each body (If: 1, its predicate comes first).
  uint8_t body_input_offset = 0;
  /// The epilogue step this op is, when a library call can absorb it.
  Epilogue epilogue = Epilogue::kNone;

  bool has(OpTrait t) const { return (traits & t) != 0; }
  /// Index of a named attribute; -1 when absent.
  int attr_index(std::string_view name) const;
  /// Index of a named attribute the row declares (InternalError otherwise).
  size_t attr_at(std::string_view name) const {
    for (size_t i = 0; i < attrs.size(); ++i)
      if (!name.empty() && attrs[i].name[0] == name[0] && name == attrs[i].name) return i;
    missing_attr(name);
  }

 private:
  [[noreturn]] void missing_attr(std::string_view name) const;
};

/// The value of `op`'s attribute `name` in `attrs` (a call's attributes,
/// complete): what gradient rules and passes read attributes with.
inline const AttrValue& attr_of(const OpDef& op, const Attrs& attrs, std::string_view name) {
  return attrs[op.attr_at(name)];
}
template <typename T>
const T& attr_value(const OpDef& op, const Attrs& attrs, std::string_view name) {
  return std::get<T>(attr_of(op, attrs, name));
}
/// The object attribute `name` as a T, or nullptr when it holds another type.
template <typename T>
const T* attr_object(const OpDef& op, const Attrs& attrs, std::string_view name) {
  return dynamic_cast<const T*>(std::get<AttrObjectRef>(attr_of(op, attrs, name)).get());
}

/// The table row for `id`. The table is built once, on first use.
const OpDef& op_def(OpId id);
/// Lookup by TensorFlow type name ("AddV2"); nullptr when unknown.
const OpDef* find_op(std::string_view type_name);
/// All rows, in OpId order.
std::span<const OpDef> op_table();

/// Builder used by the family files to fill their rows.
class OpDefBuilder {
 public:
  explicit OpDefBuilder(OpDef& d) : d_(d) {}
  OpDefBuilder& inputs(std::vector<const char*> v) {
    d_.inputs = std::move(v);
    return *this;
  }
  OpDefBuilder& outputs(std::vector<const char*> v) {
    d_.outputs = std::move(v);
    return *this;
  }
  /// Declares an attribute; without a default it is required.
  OpDefBuilder& attr(const char* name, AttrType type);
  OpDefBuilder& attr(const char* name, AttrType type, AttrValue def);
  OpDefBuilder& traits(uint32_t t) {
    d_.traits |= t;
    return *this;
  }
  OpDefBuilder& infer(InferFn f) {
    d_.infer = f;
    return *this;
  }
  /// The gradient rule (see GradFn); ops without one and without
  /// kNoGradient make GradientTape::gradient fail when on a gradient path.
  OpDefBuilder& grad(GradFn f) {
    d_.grad = f;
    return *this;
  }
  OpDefBuilder& cost(CostFn f) {
    d_.cost = f;
    return *this;
  }
  OpDefBuilder& jit_lower(JitLowerFn f) {
    d_.jit_lower = f;
    return *this;
  }
  /// A row that only relabels its input's values (Reshape): JitIndexMap::kRelabel.
  OpDefBuilder& jit_relabel() {
    d_.jit_index_map = JitIndexMap::kRelabel;
    return *this;
  }
  OpDefBuilder& jit_view(JitViewFn f) {
    d_.jit_view = f;
    return *this;
  }
  OpDefBuilder& jit_product(JitProductFn f) {
    d_.jit_product = f;
    return *this;
  }
  OpDefBuilder& onnx(OnnxExportFn f) {
    d_.onnx = f;
    return *this;
  }
  /// TensorFlow's op of this type name imports as this row, directly.
  OpDefBuilder& tf() {
    d_.tf_direct = true;
    return *this;
  }
  /// TensorFlow's op of this type name imports through `f`.
  OpDefBuilder& tf(TfImportFn f) {
    d_.tf_import = f;
    return *this;
  }
  /// Its TensorFlow form (OpDef::tf_attr_inputs): how it is written in
  /// SavedModels, and how TensorFlow's op of this type name imports, directly.
  OpDefBuilder& tf_form(std::vector<OpDef::TfAttrInput> inputs,
                        std::vector<std::pair<const char*, const char*>> names = {}) {
    d_.tf_direct = true;
    d_.tf_attr_inputs = std::move(inputs);
    d_.tf_attr_names = std::move(names);
    return *this;
  }
  /// The ONNX op computing this row from the same inputs, no attributes.
  OpDefBuilder& onnx(const char* op_type) {
    d_.onnx_type = op_type;
    return *this;
  }
  OpDefBuilder& epilogue(Epilogue e) {
    d_.epilogue = e;
    return *this;
  }
  OpDefBuilder& body_input_offset(uint8_t k) {
    d_.body_input_offset = k;
    return *this;
  }

 private:
  OpDef& d_;
};

/// Passed to family definers while the table is built.
class OpTableBuilder {
 public:
  explicit OpTableBuilder(std::vector<OpDef>& rows) : rows_(rows) {}
  OpDefBuilder def(OpId id) { return OpDefBuilder(rows_[static_cast<size_t>(id)]); }
  void kernel(OpId id, KernelFn k) { rows_[static_cast<size_t>(id)].cpu_kernel = k; }
  void block_kernel(OpId id, BlockFnF32 k) { rows_[static_cast<size_t>(id)].block_f32 = k; }
  void jit_cost(OpId id, JitCostFn f) { rows_[static_cast<size_t>(id)].jit_cost = f; }

 private:
  std::vector<OpDef>& rows_;
};

namespace detail {
/// Fills every row once, when the table is first used: the ops' rows, their
/// CPU kernels and autodiff's rules. Defined by the one unit above every
/// layer (src/registry/op_table.cpp), so no layer calls up into another.
void assemble_op_table(OpTableBuilder& t);
}  // namespace detail

/// Output description produced by inference: dtype and (maybe partial) shape.
struct TensorSpec {
  DType dtype = DType::kInvalid;
  Shape shape;
};

/// What inference and kernels both know of an op call: the op, its
/// attributes by name, and how to fail naming it.
class OpCall {
 public:
  OpCall(const OpDef& op, const Attrs& attrs) : op_(op), attrs_(attrs) {}
  const OpDef& op() const { return op_; }
  const Attrs& attrs() const { return attrs_; }
  /// Attributes by name (the row's AttrDef names).
  const AttrValue& attr(std::string_view name) const { return attr_of(op_, attrs_, name); }
  bool attr_bool(std::string_view n) const { return std::get<bool>(attr(n)); }
  int64_t attr_int(std::string_view n) const { return std::get<int64_t>(attr(n)); }
  double attr_float(std::string_view n) const { return std::get<double>(attr(n)); }
  DType attr_dtype(std::string_view n) const { return std::get<DType>(attr(n)); }
  const std::string& attr_string(std::string_view n) const {
    return std::get<std::string>(attr(n));
  }
  const std::vector<int64_t>& attr_ints(std::string_view n) const {
    return std::get<std::vector<int64_t>>(attr(n));
  }
  const Tensor& attr_tensor(std::string_view n) const { return std::get<Tensor>(attr(n)); }
  const Subgraph& attr_subgraph(std::string_view n) const {
    return *std::get<Ref<Subgraph>>(attr(n));
  }
  /// An object attribute as its type T; fails when it holds another type.
  template <typename T>
  const T& attr_object(std::string_view n) const {
    const T* t = kiln::attr_object<T>(op_, attrs_, n);
    if (!t) fail("attribute '", n, "' does not hold the object this op reads");
    return *t;
  }
  /// Throws InvalidArgumentError "<OpType>: <message>" naming the running op.
  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    throw InvalidArgumentError(str_cat(op_.type_name, ": ", args...));
  }

 protected:
  const OpDef& op_;
  const Attrs& attrs_;
};

/// Shape and dtype inference for one op call. Works on concrete tensors
/// (eager) and symbolic ones (tracing: shapes may have unknown dims).
/// Validation failures throw InvalidArgumentError with the op's name.
class InferContext : public OpCall {
 public:
  InferContext(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs)
      : OpCall(op, attrs), inputs_(inputs) {}

  size_t num_inputs() const { return inputs_.size(); }
  const Tensor& input(size_t i) const { return inputs_[i]; }
  DType dtype(size_t i) const { return inputs_[i].dtype(); }
  const Shape& shape(size_t i) const { return inputs_[i].shape(); }
  /// The input's value when known (always eagerly; when constant while
  /// tracing); nullptr otherwise.
  const Tensor* value(size_t i) const;
  /// The input's value as int64s (int32/int64 inputs), if known.
  bool int_values(size_t i, std::vector<int64_t>& out) const;
  /// The same into inline storage (no allocation for up to 8 values).
  bool int_values(size_t i, SmallVec<int64_t, 8>& out) const;

  void set_output(size_t i, DType dtype, Shape shape);
  size_t num_outputs() const { return n_; }
  const TensorSpec& output(size_t i) const { return outputs()[i]; }
  /// The inferred outputs (contiguous).
  std::span<const TensorSpec> outputs() const {
    return heap_.empty() ? std::span<const TensorSpec>(inline_, n_)
                         : std::span<const TensorSpec>(heap_.data(), n_);
  }

  /// Checks input i has dtype `want`.
  void expect_dtype(size_t i, DType want) const;
  /// Checks inputs i and j have the same dtype.
  void expect_same_dtype(size_t i, size_t j) const;
  /// Name of input i for messages ("x", or "values[2]" for variadic inputs).
  std::string input_name(size_t i) const;

 private:
  std::span<const Tensor> inputs_;
  // Most ops have one or two outputs: keep them inline (no allocation).
  static constexpr size_t kInline = 2;
  TensorSpec inline_[kInline];
  std::vector<TensorSpec> heap_;
  size_t n_ = 0;
};

class ThreadPool;

/// What a CPU kernel sees: concrete inputs, attrs, and the inferred output
/// specs (fully defined). Kernels create outputs through allocate_output (which
/// may reuse an input buffer that nothing else references) or set_output
/// (views). Kernels may throw kiln errors for value-dependent failures
/// (integer division by zero, out-of-range gather index).
class KernelContext : public OpCall {
 public:
  KernelContext(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                std::span<const TensorSpec> specs, std::span<Tensor> outputs)
      : OpCall(op, attrs), inputs_(inputs), specs_(specs), outputs_(outputs) {}

  size_t num_inputs() const { return inputs_.size(); }
  const Tensor& input(size_t i) const { return inputs_[i]; }

  size_t num_outputs() const { return outputs_.size(); }
  const TensorSpec& output_spec(size_t i) const { return specs_[i]; }
  /// Allocates output i per its spec. If `reuse_input` >= 0 names an input
  /// of the same dtype and size whose buffer nobody else holds, that buffer is
  /// reused (in-place). Returns the output tensor.
  Tensor& allocate_output(size_t i, int reuse_input = -1);
  void set_output(size_t i, Tensor t);
  Tensor& output(size_t i) { return outputs_[i]; }

 private:
  std::span<const Tensor> inputs_;
  std::span<const TensorSpec> specs_;
  std::span<Tensor> outputs_;
};

/// Validates attrs against the op's schema, filling defaults for missing
/// trailing ones; throws InvalidArgumentError for type mismatches.
void complete_attrs(const OpDef& op, Attrs& attrs);

}  // namespace kiln
