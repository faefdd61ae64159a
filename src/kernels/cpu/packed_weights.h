// Internal: weights reordered into a oneDNN primitive's layout, kept for
// later calls (conv.cpp's filters, matmul_onednn.cpp's float32 weights of bf16 products), within
// one budget (Config::packed_weights_bytes). A packing is reused while its
// source buffer keeps the version it had when packed (Buffer::version, renewed
// by every write); wrapped memory (no version) keeps a copy of its bytes and is
// reused while they match. Packings idle for a second make room for new ones.
// A float32 filter may be packed with per-output-channel factors folded in (a
// BatchNorm's scale): the packing then also matches only those factors.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::cpu {

/// Weights reordered into a primitive's layout, with what they came from.
struct PackedWeights {
  const void* source = nullptr;  ///< the buffer it was packed from
  uint64_t version = 0;          ///< the source's version (0: none, `user` holds its bytes)
  std::vector<char> user;
  std::vector<float> scale;  ///< the factors folded in (FilterRef::scale), empty: none
  Tensor packed;
  int64_t bytes = 0;  ///< counted against the budget
  mutable std::atomic<std::chrono::steady_clock::rep> last_use{0};
  void used() const;
  ~PackedWeights();
};

/// One primitive's weights: the user's layout, the primitive's, the reorder
/// between them and the packings kept (newest first).
struct WeightPacks {
  dnnl::memory::desc user_md, md;
  std::optional<dnnl::reorder> reorder;  ///< absent when the layouts agree
  size_t reorder_scratch_bytes = 0;
  /// Where oneDNN reorders no strided filter slice into `md` (Winograd's
  /// layout): the slice copied to a dense layout first (`dense_md`).
  std::optional<dnnl::reorder> to_dense;
  dnnl::memory::desc dense_md;
  std::mutex mu;
  std::vector<std::shared_ptr<const PackedWeights>> kept;
};

/// The packings of weights in layout `user` for primitives whose weights
/// layout is `packed`: one object per pair of layouts, shared by every
/// primitive that has them (a layer's convolution in graph mode and under
/// jit_compile, with other epilogues, packs its filter once).
std::shared_ptr<WeightPacks> weight_packs(const dnnl::memory::desc& user,
                                          const dnnl::memory::desc& packed);

/// Weights as given: their elements and the version of their buffer's contents.
struct FilterRef {
  const char* data;
  size_t bytes;
  uint64_t version;  ///< Buffer::version(); 0: unknown
  /// float32 weights only: per-output-channel factors multiplied in when
  /// packed (nullptr: none). Element i of the user layout (output channels
  /// last, `scale_ld` apart) belongs to channel i % scale_ld; those from
  /// `scale_n` on belong to other parts of a wider filter.
  const float* scale = nullptr;
  int64_t scale_ld = 0, scale_n = 0;
};
FilterRef filter_ref(const Tensor& f);

/// Whether weights at `data` with buffer version `version` (non-zero) were
/// seen before by this test: true from a product's second call on weights
/// that did not change (a variable's), never for a fresh activation, whose
/// buffer has a new version on every call. Remembers a bounded set.
bool weights_seen_before(const void* data, uint64_t version);

/// `f` in `w`'s layout: a kept packing (`packed` set), else a reorder into
/// `holder`, kept for later calls while the budget allows.
dnnl::memory packed_weights(const std::shared_ptr<WeightPacks>& w, const FilterRef& f,
                            Tensor& holder, std::shared_ptr<const PackedWeights>& packed);

}  // namespace kiln::cpu
