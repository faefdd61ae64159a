// How a convolution runs as blocks on kiln's pool (conv_split.h).
#include "conv_split.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kiln/thread_pool.h"

namespace kiln::cpu {
namespace {

using Geom = ConvGeom;

// Measured on EfficientNetV2-S (docs/BENCHMARKS.md): more blocks per thread
// balance no better, fewer leave a busy machine's threads waiting.
constexpr int kBlocksPerThread = 4;
// Blocks of this many multiply-adds keep that balance; less work gets fewer
// blocks, at least one per thread: a block costs a pool task and a oneDNN call
// (~4 us), and MobileNetV3Small's 1x1 convolutions (1-3M multiply-adds) took
// 1.3-2x as long in 8 blocks as in 2.
constexpr double kBalancedBlockMacs = 1 << 22;
// A convolution of fewer multiply-adds runs as one call; a block holds at least
// kMinConvBlockMacs. Two blocks of those convolutions take 0.55-0.75x one
// call's time on an idle machine (docs/BENCHMARKS.md, sixteenth session).
constexpr double kMinSplitConvMacs = 1 << 18, kMinConvBlockMacs = 1 << 17;
// A row block of fewer output pixels runs oneDNN's kernels well below their speed.
constexpr int64_t kMinBlockPixels = 96;
// Channel blocks: at least this many channels (a multiple of oneDNN's 16).
constexpr int64_t kMinOcBlock = 64;
// A filter this large splits by channels even where it computes little (a
// classifier head on one pixel reads 4 MB): each thread reads its part.
constexpr int64_t kMinSplitFilterBytes = 1 << 20;
// Depthwise convolutions read and write as much as they compute: split smaller ones.
constexpr double kMinSplitMacsDepthwise = 1 << 18, kMinBlockMacsDepthwise = 1 << 16;

// Output rows a block holds a multiple of: both tiles' heights.
constexpr int64_t kWinogradTile = 4;

// A Winograd block reads the whole transformed filter (1.8-4x the filter's
// bytes): blocks of fewer output pixels are bound by that read (4 rows of a
// 7x7 image with 512 channels each way: 2.2x the direct convolution's time).
constexpr int64_t kMinWinogradPixels = 256;

// The most rows any thread runs when n images' blocks of `rows` rows are taken in
// order by `threads` threads, each taking the next block when it finishes.
int64_t makespan(int64_t oh, int64_t n, int64_t rows, int threads) {
  std::vector<int64_t> load(static_cast<size_t>(threads), 0);
  for (int64_t img = 0; img < n; ++img)
    for (int64_t r0 = 0; r0 < oh; r0 += rows)
      *std::min_element(load.begin(), load.end()) += std::min(rows, oh - r0);
  return *std::max_element(load.begin(), load.end());
}

// Row blocks of at least `min_rows` rows, about kBlocksPerThread per thread; when
// that makes few blocks, the most blocks of the least makespan (14 rows as 2
// blocks of 7, not 7 of 2 where one thread runs 4).
Split row_split(const Geom& g, int threads, int64_t min_rows, int64_t target) {
  const int64_t want = std::max<int64_t>(1, ceil_div(target, g.n));
  Split s;
  s.rows = std::clamp<int64_t>(ceil_div(g.oh, want), std::min(min_rows, g.oh), g.oh);
  const int64_t blocks = ceil_div(g.oh, s.rows);
  if (blocks * g.n < 2 * target) {
    int64_t best = makespan(g.oh, g.n, s.rows, threads);
    for (int64_t b = blocks - 1; b >= 1; --b)  // fewer, taller blocks
      if (const int64_t r = ceil_div(g.oh, b), m = makespan(g.oh, g.n, r, threads); m < best) {
        best = m;
        s.rows = r;
      }
  }
  s.per_image = ceil_div(g.oh, s.rows);
  return s;
}

// The blocks a split aims at (see kBalancedBlockMacs).
int64_t target_blocks(double macs, int threads) {
  const auto by_work = static_cast<int64_t>(std::min(macs / kBalancedBlockMacs, 1e9));
  return std::clamp<int64_t>(by_work, threads, int64_t{threads} * kBlocksPerThread);
}

}  // namespace

Split split_of(const Geom& g, bool versioned_filter) {
  const double macs = conv_macs(g);
  const bool rows_pay = macs >= (g.depthwise ? kMinSplitMacsDepthwise : kMinSplitConvMacs);
  const bool big_filter = !g.depthwise && g.kh * g.kw * g.c * g.oc * 4 >= kMinSplitFilterBytes;
  if (!rows_pay && !big_filter) return {};
  const int threads = ThreadPool::global().num_threads();  // large work starts the pool
  if (threads <= 1) return {};
  const double row_macs = macs / static_cast<double>(g.n * g.oh);
  const double min_block = g.depthwise ? kMinBlockMacsDepthwise : kMinConvBlockMacs;
  const int64_t min_rows = static_cast<int64_t>(std::ceil(min_block / std::max(1.0, row_macs)));
  const int64_t target = target_blocks(macs, threads);
  if (!g.depthwise) {
    if (rows_pay) {
      Split s = row_split(g, threads, std::max(min_rows, ceil_div(kMinBlockPixels, g.ow)), target);
      if (s.per_image * g.n >= threads) return s;
    }
    const int64_t blocks = std::min<int64_t>(target, g.oc / kMinOcBlock);
    if (versioned_filter && blocks >= 2)
      return Split{g.oh, 1, ceil_div(ceil_div(g.oc, blocks), 16) * 16};
    if (!rows_pay) return {};
  }
  Split s = row_split(g, threads, min_rows, target);
  return s.per_image * g.n >= 2 ? s : Split{};
}

// Row blocks of whole tiles and enough pixels: the least makespan; of those,
// the tallest giving every thread two blocks (a busy machine's balance) when
// they hold two tiles or more, else the tallest. None (rows == 0) where that
// leaves a thread idle.
Split winograd_split(const Geom& g, bool versioned_filter) {
  const int threads = ThreadPool::global().num_threads();
  if (threads <= 1) return Split{g.oh, 1, 0};
  const int64_t min_rows = round_up(ceil_div(kMinWinogradPixels, g.ow), kWinogradTile);
  int64_t best = -1, balanced = 0, tallest = 0;
  for (int64_t rows = round_up(g.oh, kWinogradTile); rows > 0; rows -= kWinogradTile) {
    const int64_t r = std::min(rows, g.oh);
    if (r < g.oh && r < min_rows) break;  // whole images always qualify
    const int64_t m = makespan(g.oh, g.n, r, threads);
    if (best >= 0 && m > best) continue;
    if (best < 0 || m < best) {
      best = m;
      balanced = 0;
      tallest = r;
    }
    if (!balanced && ceil_div(g.oh, r) * g.n >= 2 * threads) balanced = r;
  }
  const int64_t rows = balanced >= 2 * kWinogradTile ? balanced : tallest;
  if (ceil_div(g.oh, rows) * g.n >= threads) return Split{rows, ceil_div(g.oh, rows), 0};
  if (versioned_filter && g.oc >= 32 * threads)
    return Split{g.oh, 1, round_up(ceil_div(g.oc, threads), 16)};
  return {};
}

}  // namespace kiln::cpu
