// Weights kept reordered into oneDNN primitives' layouts (packed_weights.h).
#include "packed_weights.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>

#include "conv_util.h"
#include "kiln/config.h"

namespace kiln::cpu {
namespace {

// Bytes held by all PackedWeights, kept within config().packed_weights_bytes.
std::atomic<int64_t> g_packed_bytes{0};
// Filters reordered so far (kept or not), for tests.
std::atomic<int64_t> g_reorders{0};
// A kept packing unused this long may make room for a new one (make_room).
constexpr auto kPackedIdle = std::chrono::seconds(1);

constexpr size_t kPackedPerPrim = 128;

// Every kept packing with its primitive, for the budget (make_room).
struct PackedRegistry {
  std::mutex mu;
  std::vector<std::pair<std::weak_ptr<WeightPacks>, std::weak_ptr<const PackedWeights>>> kept;
};
PackedRegistry& packed_registry() {
  static auto& r = *new PackedRegistry;  // never destroyed
  return r;
}

// True when `bytes` more fit the budget, after dropping the least recently used
// packings among those idle for kPackedIdle: filters of models no longer run (a
// dead filter's version never comes back). A model whose own filters pass the
// budget keeps its first ones (its packings are not idle: no cyclic eviction).
bool make_room(int64_t bytes) {
  const int64_t budget = config().packed_weights_bytes;
  if (g_packed_bytes.load() + bytes <= budget) return true;
  PackedRegistry& r = packed_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::erase_if(r.kept, [](const auto& e) { return e.second.expired(); });
  const auto before = (std::chrono::steady_clock::now() - kPackedIdle).time_since_epoch().count();
  std::vector<std::pair<std::chrono::steady_clock::rep, size_t>> idle;  // (last use, index)
  for (size_t i = 0; i < r.kept.size(); ++i)
    if (const auto w = r.kept[i].second.lock(); w && w->last_use.load() < before)
      idle.emplace_back(w->last_use.load(), i);
  std::sort(idle.begin(), idle.end());
  for (const auto& [use, i] : idle) {
    if (g_packed_bytes.load() + bytes <= budget) break;
    const auto packs = r.kept[i].first.lock();
    if (!packs) continue;
    std::lock_guard<std::mutex> packs_lock(packs->mu);
    const auto w = r.kept[i].second.lock();
    std::erase(packs->kept, w);  // freed now unless a call still runs with it
  }
  return g_packed_bytes.load() + bytes <= budget;
}

}  // namespace

void PackedWeights::used() const {
  last_use.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                 std::memory_order_relaxed);
}
PackedWeights::~PackedWeights() {
  g_packed_bytes -= bytes;
}

namespace {

// Sets `w`'s layouts, creating the reorder when they differ.
void init_weight_packs(WeightPacks& w, const dnnl::memory::desc& user,
                       const dnnl::memory::desc& packed) {
  w.user_md = user;
  w.md = packed;
  if (packed == user) return;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::engine& e = dnnl_engine();
  std::optional<dnnl::reorder::primitive_desc> rpd;
  try {
    rpd.emplace(e, user, e, packed, attr);
  } catch (const dnnl::error&) {
    const dnnl::memory::dims dims = user.dims();
    if (dims.size() != 4) throw;  // a 4-d filter slice (o, i, h, w): via dense HWIO
    w.dense_md = dnnl::memory::desc(dims, user.data_type(), dnnl::memory::format_tag::hwio);
    w.to_dense = dnnl::reorder(dnnl::reorder::primitive_desc(e, user, e, w.dense_md));
    rpd.emplace(e, w.dense_md, e, packed, attr);
  }
  w.reorder_scratch_bytes = rpd->scratchpad_desc().get_size();
  w.reorder = dnnl::reorder(*rpd);
}

// Every live WeightPacks, to share one per pair of layouts.
struct PacksRegistry {
  std::mutex mu;
  std::vector<std::weak_ptr<WeightPacks>> all;
};

}  // namespace

std::shared_ptr<WeightPacks> weight_packs(const dnnl::memory::desc& user,
                                          const dnnl::memory::desc& packed) {
  static auto& r = *new PacksRegistry;  // never destroyed
  std::lock_guard<std::mutex> lock(r.mu);
  std::erase_if(r.all, [](const auto& w) { return w.expired(); });
  for (const auto& weak : r.all)
    if (auto w = weak.lock(); w && w->user_md == user && w->md == packed) return w;
  auto w = std::make_shared<WeightPacks>();
  init_weight_packs(*w, user, packed);
  r.all.push_back(w);
  return w;
}

FilterRef filter_ref(const Tensor& f) {
  return {static_cast<const char*>(f.raw_data()), f.nbytes(), f.buffer()->version()};
}

// The kept packing of `f`, if any: of this very buffer at the same version (a
// variable read on every call); for memory without a version, any packing that
// kept the same bytes (compared outside the lock).
namespace {

// Whether `w` was packed with f's factors (or, like f, with none).
bool same_scale(const PackedWeights& w, const FilterRef& f) {
  const size_t n = f.scale ? static_cast<size_t>(f.scale_n) : 0;
  return w.scale.size() == n && (n == 0 || std::memcmp(w.scale.data(), f.scale, n * 4) == 0);
}

std::shared_ptr<const PackedWeights> find_packed(WeightPacks& p, const FilterRef& f) {
  {
    std::lock_guard<std::mutex> lock(p.mu);
    if (f.version) {
      for (const auto& w : p.kept)
        if (w->source == f.data && w->version == f.version && same_scale(*w, f)) {
          w->used();
          return w;
        }
      return nullptr;
    }
  }
  const auto kept = [&] {
    std::lock_guard<std::mutex> lock(p.mu);
    return p.kept;
  }();
  for (const auto& w : kept)
    if (w->user.size() == f.bytes && std::memcmp(w->user.data(), f.data, f.bytes) == 0 &&
        same_scale(*w, f)) {
      w->used();
      return w;
    }
  return nullptr;
}

// f's float32 elements times their channel's factor, in f's user layout
// (`md`), into `out`: the span from f.data to its last element, gaps zeroed.
void scaled_copy(const dnnl::memory::desc& md, const FilterRef& f, Tensor& out) {
  int64_t elems = 1;
  for (const int64_t d : md.dims()) elems *= d;
  const int64_t rows = elems / f.scale_n, span = (rows - 1) * f.scale_ld + f.scale_n;
  out = Tensor::empty(DType::kFloat32, Shape{span});
  const float* src = reinterpret_cast<const float*>(f.data);
  float* dst = out.mutable_data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = src + r * f.scale_ld;
    float* b = dst + r * f.scale_ld;
    for (int64_t ch = 0; ch < f.scale_n; ++ch) b[ch] = a[ch] * f.scale[ch];
    if (r + 1 < rows)
      for (int64_t ch = f.scale_n; ch < f.scale_ld; ++ch) b[ch] = 0.f;
  }
}

}  // namespace

// The weights in p's layout: a kept packing (find_packed), else a reorder
// into `holder` (kept for later calls while the budget allows).
dnnl::memory packed_weights(const std::shared_ptr<WeightPacks>& packs, const FilterRef& f,
                            Tensor& holder, std::shared_ptr<const PackedWeights>& packed) {
  WeightPacks& p = *packs;
  dnnl::stream& s = dnnl_stream();
  const dnnl::engine& e = dnnl_engine();
  const char* filter = f.data;
  const size_t filter_bytes = f.bytes;
  dnnl::memory wei(p.user_md, e, const_cast<char*>(filter));
  if (!p.reorder && !f.scale) return wei;
  packed = find_packed(p, f);
  if (packed) return dnnl::memory(p.md, e, const_cast<void*>(packed->packed.raw_data()));
  dnnl::memory user = wei;
  Tensor scaled;
  if (f.scale) {  // the factors multiplied in first, in the user's layout
    scaled_copy(p.user_md, f, scaled);
    user = dnnl::memory(p.user_md, e, scaled.mutable_raw_data());
    if (!p.reorder) holder = scaled;
  }
  if (p.reorder) {
    wei = dnnl::memory(p.md, e, dnnl_scratch(holder, p.md.get_size()));
    Tensor reorder_scratch_buf;
    Tensor dense;
    if (p.to_dense) {
      dnnl::memory d(p.dense_md, e, dnnl_scratch(dense, p.dense_md.get_size()));
      p.to_dense->execute(s, user, d);
      user = d;
    }
    std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, wei}};
    if (p.reorder_scratch_bytes)
      args.emplace(DNNL_ARG_SCRATCHPAD,
                   dnnl_scratch_memory(reorder_scratch_buf, p.reorder_scratch_bytes));
    p.reorder->execute(s, args);
    s.wait();
  } else {
    wei = user;
  }
  ++g_reorders;
  // A versioned filter is recognized by its version alone; memory that has
  // none (wrapped) keeps a copy of its bytes to compare with.
  const size_t user_bytes = f.version ? 0 : filter_bytes;
  const size_t scale_n = f.scale ? static_cast<size_t>(f.scale_n) : 0;
  const int64_t bytes = static_cast<int64_t>(user_bytes + scale_n * 4 + holder.nbytes());
  if (make_room(bytes)) {  // a soft budget
    auto w = std::make_shared<PackedWeights>();
    w->source = filter;
    w->version = f.version;
    w->user.assign(filter, filter + user_bytes);
    if (scale_n) w->scale.assign(f.scale, f.scale + scale_n);
    w->packed = holder;
    w->bytes = bytes;
    w->used();
    g_packed_bytes += bytes;
    std::weak_ptr<const PackedWeights> kept = w;
    {
      std::lock_guard<std::mutex> lock(p.mu);
      auto& ws = p.kept;
      // Newest first. Older packings of this buffer are stale (another version,
      // or other factors), but one with factors and one without stay side by
      // side: a filter read by a folded and an unfolded convolution alike.
      std::erase_if(ws, [&](const auto& o) {
        return o->source == filter && (o->version != f.version || o->scale.empty() == !scale_n);
      });
      ws.insert(ws.begin(), std::move(w));
      if (ws.size() > kPackedPerPrim) ws.pop_back();
    }
    PackedRegistry& r = packed_registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.kept.emplace_back(packs, std::move(kept));
  }
  return wei;
}

bool weights_seen_before(const void* data, uint64_t version) {
  constexpr size_t kRemembered = 4096;
  static auto& mu = *new std::mutex;
  static auto& seen = *new std::set<std::pair<const void*, uint64_t>>;
  std::lock_guard<std::mutex> lock(mu);
  if (seen.count({data, version})) return true;
  if (seen.size() >= kRemembered) seen.clear();
  seen.insert({data, version});
  return false;
}

int64_t packed_filter_bytes() {
  return g_packed_bytes.load();
}

int64_t filter_reorders() {
  return g_reorders.load();
}

}  // namespace kiln::cpu
