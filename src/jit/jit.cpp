#include "jit.h"

#include <atomic>
#include <mutex>

#include "cache.h"
#include "cluster.h"
#include "core/env.h"
#include "emit_cpp.h"
#include "fold.h"
#include "kiln/passes.h"
#include "loader.h"
#include "runtime.h"
#include "sink_views.h"
#include "split_reductions.h"
#include "toolchain.h"

namespace kiln::jit {
namespace {

constexpr uint64_t kDefaultCacheBytes = 512ull << 20;

uint64_t cache_limit() {
  return env_count("KILN_CACHE_MAX_BYTES", kDefaultCacheBytes);
}

std::string module_key(const Toolchain& tc, const std::string& source) {
  std::string id = str_cat(source, "\n--\n", tc.cxx, "\n", tc.version, "\n");
  for (const std::string& f : tc.flags) id += str_cat(f, " ");
  return sha256_hex(str_cat(id, "\n", cpu_features(), "\nkiln ", KILN_VERSION));
}

// Set once a compile timed out: a compiler that hangs once would hang for
// every later function too, so they run in graph mode at once (cache hits
// still load).
std::atomic<bool> g_compiler_hung{false};

// A freshly compiled shared object for `source`.
std::string compile(const Toolchain& tc, const std::string& source) {
  if (g_compiler_hung.load())
    throw DeadlineExceededError(str_cat("kiln jit: the compiler ", tc.cxx,
                                        " timed out earlier in this process; not run again"));
  try {
    return compile_shared_object(tc, source);
  } catch (const DeadlineExceededError&) {
    g_compiler_hung.store(true);
    throw;
  }
}

// Loads the module for `key` and registers its kernels: the disk cache's
// entry when it is intact and loads, else a fresh compile, stored for the
// next process only once it has loaded here and has every kernel.
void load_module(const Toolchain& tc, const std::string& key, const std::string& source,
                 const std::vector<std::string>& symbols, JitResult& r) {
  static std::mutex mu;  // one compile per module in this process
  std::lock_guard<std::mutex> lock(mu);
  if (find_kernel(str_cat(key, "/", symbols[0]))) {
    r.cache_hit = true;
    return;
  }
  const DiskCache cache(default_cache_dir(), cache_limit());
  try {
    if (std::optional<std::string> b = cache.load(key)) {
      auto so = std::make_shared<LoadedModule>(LoadedModule::load(*b));
      register_module(key, std::move(so), symbols);
      r.cache_hit = true;
      return;
    }
  } catch (const Error& e) {  // unreadable, or an entry that verified but does not load
    r.warning = str_cat("jit cache entry not used (", e.what(), "); compiling");
  }
  const std::string bytes = compile(tc, source);
  register_module(key, std::make_shared<LoadedModule>(LoadedModule::load(bytes)), symbols);
  try {
    cache.store(key, bytes);
  } catch (const Error& e) {
    r.warning = str_cat("jit cache not written (", e.what(), ")");
  }
}

}  // namespace

JitResult compile_jit(std::unique_ptr<Graph>& graph) {
  JitResult r;
  std::unique_ptr<Graph> g = graph->clone();
  const auto splits = split_reductions(*g);
  sink_views(*g);
  Clusters cl = form_clusters(*g, "kiln_jit");
  if (cl.kernels.empty()) return r;
  const std::vector<std::string> folded = fold_reductions(*g, cl);
  rejoin_parts(*g, splits);
  prune(*g);  // the constant operands of slices read in place, folds' Identities
  for (const Kernel& k : cl.kernels) r.hlo += k.to_string();
  for (const Kernel& k : cl.optimized) r.optimized_hlo += k.to_string();
  for (const std::string& line : folded) {
    r.hlo += line;
    r.optimized_hlo += line;
  }
  r.source = emit_module(cl.optimized);
  std::string why;
  const std::optional<Toolchain> tc = find_toolchain(&why);
  if (!tc) {
    r.warning =
        str_cat("jit_compile: no C++ compiler (", why, "); function '", graph->function_name(),
                "' runs through the graph executor instead. Set KILN_CXX to a compiler.");
    return r;
  }
  const std::string key = module_key(*tc, r.source);
  std::vector<std::string> symbols;
  for (const Kernel& k : cl.optimized) symbols.push_back(k.name);
  try {
    load_module(*tc, key, r.source, symbols, r);
  } catch (const Error& e) {
    r.warning = str_cat("jit_compile: compiling function '", graph->function_name(),
                        "' failed; it runs through the graph executor instead: ", e.what());
    return r;
  }
  for (size_t i = 0; i < cl.kernel_nodes.size(); ++i) {
    Node* n = cl.kernel_nodes[i];
    Attrs a = n->attrs();
    a[n->op().attr_at("kernel")] = str_cat(key, "/", symbols[i]);
    n->set_attrs(std::move(a));
  }
  r.kernels = cl.kernel_nodes.size();
  graph = std::move(g);
  return r;
}

void check_jit_supported(const Graph& g) {
  std::string list;
  size_t count = 0;
  for (const auto& n : g.nodes()) {
    bool strings = false;
    // String values (Identity and views just pass them on).
    if (!n->op().has(kView)) {
      for (const TensorSpec& s : n->outputs()) strings |= s.dtype == DType::kString;
      for (const Edge& e : n->inputs())
        strings |= e.node->outputs()[static_cast<size_t>(e.index)].dtype == DType::kString;
    }
    if (!n->op().has(kNoJit) && !strings) continue;
    ++count;
    list += str_cat("\n  ", n->op().type_name, " (node '", n->name(), "'",
                    n->location().empty() ? "" : str_cat(", defined at ", n->location()), ")");
  }
  if (count == 0) return;
  throw InvalidArgumentError(
      str_cat("Detected unsupported operations when trying to compile graph '", g.function_name(),
              "' with jit_compile=True: ", count, count == 1 ? " operation" : " operations",
              " cannot be compiled:", list,
              "\nRun them outside the function or use jit_compile=None/False for this function."));
}

}  // namespace kiln::jit
