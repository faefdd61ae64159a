// The compiled program a JitKernel node runs: the kernel's IR, how each
// output's shape follows from the inputs, the views, product and folds the
// runtime applies around the generated code, and, once its module loads, the
// code's entry point. The compiler (src/jit/fusion/) makes it, the op's
// inference (src/ops/fused.cpp) and the runtime (src/jit/runtime/) read it:
// typed structs, as a body function is a typed subgraph reference.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jit/ir/jit_ir.h"

namespace kiln::jit {

/// What a generated kernel receives (the same struct is declared in the
/// generated code). Sizes are the collapsed layout's; `fast` is set when every
/// input's inner stride matches the pattern the kernel was specialized for;
/// `stream` asks a row kernel to write its rows with non-temporal stores
/// (outputs too large to stay in cache); `tile` (nullptr: none), per input,
/// the tile of rows [r0, r1) x columns [c0, c1) of an input read transposed,
/// copied out row-major with `tile_pitch` values per row (runtime.cpp).
struct KernelArgs {
  const void* const* in;
  void* const* out;
  int64_t rank;
  const int64_t* shape;    ///< rank dims
  const int64_t* strides;  ///< input k's strides at [k * rank, (k + 1) * rank)
  int64_t fast;
  int64_t stream;
  const void* const* tile = nullptr;
  int64_t tile_pitch = 0;
};
/// A generated kernel: rows [r0, r1) x columns [c0, c1) of the layout.
using KernelFn = void (*)(const KernelArgs*, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

/// How one output's shape follows from the node's inputs.
struct OutputRule {
  enum Form : uint8_t {
    kSpace,  ///< the broadcast of inputs `deps` (aligned to the space's rank)
    kRow,    ///< one value per row of that broadcast: the reduced dims 1 or gone
    kFixed,  ///< `dims` (a cluster relabelled through a reshape)
  };
  DType dtype = DType::kInvalid;
  Form form = kSpace;
  std::vector<int32_t> deps;  ///< kSpace, kRow: kernel inputs
  bool keepdims = false;      ///< kRow
  std::vector<int64_t> dims;  ///< kFixed
};

/// A product the kernel computes itself: kernel input `slot` is op(A) x
/// op(B) (Product), A the node's input `slot` and B its last input. Kernel
/// inputs `also` read the product too (the node passes A there, unread),
/// each through a view of column runs of whole rows (reads_columns: an
/// LSTM's gates); `slot` may be read through one as well.
struct ProductInput {
  int32_t slot = 0;
  Product how;
  std::vector<int32_t> also;
  /// Whether kernel input k is the product.
  bool reads(size_t k) const {
    if (k == static_cast<size_t>(slot)) return true;
    for (int32_t a : also)
      if (static_cast<size_t>(a) == k) return true;
    return false;
  }
};

/// What the runtime derives from a call's input shapes (runtime.cpp), kept
/// for the next call with the same shapes.
struct PreparedCall;

/// The runtime's last prepared call of a program: shared by the threads that
/// run it, swapped whole. Not part of the program's value (a copy starts
/// empty).
class CallSlot {
 public:
  CallSlot() = default;
  CallSlot(const CallSlot&) {}
  CallSlot& operator=(const CallSlot&) { return *this; }
  std::shared_ptr<const PreparedCall> load() const { return p_.load(std::memory_order_acquire); }
  void store(std::shared_ptr<const PreparedCall> p) const {
    p_.store(std::move(p), std::memory_order_release);
  }

 private:
  mutable std::atomic<std::shared_ptr<const PreparedCall>> p_;
};

/// A JitKernel node's `program` attribute. Immutable once on a node: a pass
/// that changes it (fold_reductions, binding the loaded code) puts an edited
/// copy there.
struct Program final : AttrObject {
  /// The optimized IR: the symbol name, the space's rank and reduced dims,
  /// the inputs' dtypes, the instructions and the outputs.
  Kernel kernel;
  /// With reduced dims: the values per row, or -1 when only known at run time.
  int64_t row_points = 0;
  std::vector<OutputRule> outputs;
  /// Per kernel input, the inner stride the code is specialized for: 1
  /// contiguous, 0 broadcast, 2 any (a transposed read).
  std::vector<uint8_t> pattern;
  /// Per kernel input, the view it is read through (empty start and dims:
  /// read as it is); empty: none is.
  std::vector<View> views;
  std::optional<ProductInput> product;
  /// Outputs folded over their leading or middle dims (all over the same ones).
  std::vector<Fold> folds;
  /// The computing cost of a point (stages.h), which scales the pool's grain.
  int64_t work = 1;
  /// Set once the module loads: "module/symbol" and its entry point.
  std::string symbol;
  KernelFn fn = nullptr;
  CallSlot last_call;

  /// The kernel inputs (the node's, less a product's second operand).
  size_t num_kernel_inputs() const { return pattern.size(); }
  /// Whether kernel input i is read through a view.
  bool viewed(size_t i) const {
    return i < views.size() && (!views[i].dims.empty() || !views[i].start.empty());
  }
  /// An empty string, or why the program is inconsistent for a node of
  /// `n_inputs` inputs (checked by inference before anything is read).
  std::string check(size_t n_inputs) const;
  std::string describe() const override;
};

/// A JitView node's `view` attribute.
struct ViewAttr final : AttrObject {
  View view;
  explicit ViewAttr(View v) : view(std::move(v)) {}
  std::string describe() const override;
};

/// An empty string, or why `v` is not a view a kernel can read: a source dim
/// walked twice or out of range, a zero step, a whole dim not starting at 0,
/// a negative start in a view that reads values, more than 16 dims.
std::string view_problem(const View& v);
/// The value's dims read through `v` from a source of shape `src` (unknown
/// source dims give unknown whole dims), into dims[0, v.dims.size()); an
/// empty string, or why `src` does not fit the view (its rank, an index past
/// a dim).
std::string view_dims(const View& v, const Shape& src, int64_t* dims);
/// For a contiguous source of `src`'s (known, checked) dims: each value dim's
/// stride in elements, into strides[0, v.dims.size()), and the offset of the
/// first value read (0 for a view of no values).
int64_t view_strides(const View& v, const Shape& src, int64_t* strides);

}  // namespace kiln::jit
