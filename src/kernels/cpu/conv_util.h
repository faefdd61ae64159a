// Internal: convolution geometry and oneDNN plumbing shared by the forward
// (conv.cpp) and backward (conv_grad.cpp) convolution kernels.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kiln/op.h"

namespace kiln::cpu {

/// One NHWC convolution: input [n, h, w, c], filter [kh, kw, c, oc] (or
/// [kh, kw, c, mult] when depthwise, oc = c * mult), output [n, oh, ow, oc];
/// strides, dilations and TensorFlow's pads (top, left, bottom, right).
struct ConvGeom {
  int64_t n, h, w, c, kh, kw, oc, mult, oh, ow, sh, sw, dh, dw, pt, pl, pb, pr;
  bool depthwise;
  /// The filter's output-channel stride when the convolution reads a slice of
  /// a wider filter's output channels (0: dense, oc).
  int64_t wei_ld = 0;
  /// bfloat16 input, filter and output (float32 accumulation); else float32.
  bool bf16 = false;
  /// With bf16: the filter is float32, rounded to bfloat16 when packed.
  bool f32_filter = false;
  /// float32 3x3 stride-1 convolution computed by Winograd's algorithm on
  /// oneDNN's blocked layout (conv.cpp, winograd_split).
  bool winograd = false;
  bool operator==(const ConvGeom&) const = default;
};

/// The geometry of input shape `in` and filter shape `f` under the
/// strides/padding/dilations attributes (indices 0, 1, 2) of `c`, which
/// inference has validated.
ConvGeom conv_geometry(const KernelContext& c, const Shape& in, const Shape& f, bool depthwise);

/// A primitive cache key: the geometry, the OpenMP threads the primitive is
/// created for (library_threads()), and `extra` (what else tells two apart).
struct ConvKey {
  std::array<int64_t, 24> geom;
  std::vector<int64_t> extra;
  bool operator==(const ConvKey&) const = default;
};
struct ConvKeyHash {
  size_t operator()(const ConvKey& k) const;
};
ConvKey conv_key(const ConvGeom& g);

/// A thread-safe LRU of primitives (a hash map over the recency list);
/// nullptr (also kept) marks a configuration oneDNN does not implement.
/// Leak instances on purpose (`*new`): they then outlive every static.
template <typename Prim>
class PrimCache {
 public:
  explicit PrimCache(size_t capacity) : capacity_(capacity) {}

  /// The primitive of `k`; make() (run unlocked) creates one when absent.
  template <typename Make>
  std::shared_ptr<Prim> get(ConvKey k, Make make) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = index_.find(k); it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
      }
    }
    std::shared_ptr<Prim> p = make();
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(k); it != index_.end()) return it->second->second;  // raced
    lru_.emplace_front(k, p);
    index_.emplace(std::move(k), lru_.begin());
    if (lru_.size() > capacity_) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
    return p;
  }

  /// As get(), but creates a primitive only when `k` is asked for again:
  /// null the first time (a product met once, as eager code meets its
  /// shapes, does not pay a primitive's creation).
  template <typename Make>
  std::shared_ptr<Prim> get_when_repeated(const ConvKey& k, Make make) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = index_.find(k); it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
      }
      if (seen_.size() > 4 * capacity_) seen_.clear();
      if (seen_.insert(k).second) return nullptr;
    }
    return get(k, make);
  }

 private:
  using Entry = std::pair<ConvKey, std::shared_ptr<Prim>>;
  size_t capacity_;
  std::mutex mu_;
  std::unordered_set<ConvKey, ConvKeyHash> seen_;  // asked for once, not created
  std::list<Entry> lru_;
  std::unordered_map<ConvKey, typename std::list<Entry>::iterator, ConvKeyHash> index_;
};

/// oneDNN memory descriptors of a convolution: NHWC source and destination,
/// the user's filter layout (TensorFlow's HWIO, or [kh, kw, c, mult] as
/// groups when depthwise; output channels `wei_ld` apart when set) and the
/// same dims with a layout oneDNN picks.
struct ConvDescs {
  dnnl::memory::desc src, dst, user_wei, any_wei;
};
ConvDescs conv_descs(const ConvGeom& g);

/// Multiply-adds of one convolution.
double conv_macs(const ConvGeom& g);

/// Measured on EfficientNetV2-S (docs/BENCHMARKS.md): backward convolutions
/// of fewer multiply-adds gain nothing from a split over kiln's pool, a block of
/// a split one holds at least kMinBlockMacs; the least work Winograd's
/// algorithm takes. (Forward splits: conv_split.cpp.)
inline constexpr double kMinSplitMacs = 1 << 21;
inline constexpr double kMinBlockMacs = 1 << 19;

/// The convolution of output rows [r0, r1) of one image; `in_row` is its
/// first input row (the rows its windows read, with the padding they need).
ConvGeom conv_row_block(const ConvGeom& g, int64_t r0, int64_t r1, int64_t& in_row);

/// Bytes of weights kept reordered into oneDNN's layouts (packed_weights.cpp),
/// within Config::packed_weights_bytes.
int64_t packed_filter_bytes();
/// Filters reordered into oneDNN's layouts so far, kept or not (for tests).
int64_t filter_reorders();
/// Convolution blocks computed by Winograd's algorithm so far (conv.cpp; for tests).
int64_t winograd_blocks();
/// Whether oneDNN has a Winograd convolution on this CPU (2.6: AVX-512 only);
/// without one, float32 3x3 convolutions all run direct.
bool winograd_available();
/// Whether oneDNN has bf16 convolutions on this CPU (else they compute on
/// float32 copies).
bool conv_bf16_native();

/// The process-wide oneDNN CPU engine and this thread's stream.
dnnl::engine& dnnl_engine();
dnnl::stream& dnnl_stream();

/// `bytes` of scratch memory from kiln's allocator, held by `holder`
/// (nullptr for 0 bytes).
void* dnnl_scratch(Tensor& holder, size_t bytes);

/// A u8 oneDNN memory of `bytes` scratch bytes held by `holder`.
dnnl::memory dnnl_scratch_memory(Tensor& holder, size_t bytes);

}  // namespace kiln::cpu
