#include "jit.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>

#include "core/env.h"
#include "jit/build/cache.h"
#include "jit/build/loader.h"
#include "jit/build/toolchain.h"
#include "jit/codegen/emit_cpp.h"
#include "jit/fusion/cluster.h"
#include "jit/fusion/fold.h"
#include "jit/fusion/sink_views.h"
#include "jit/fusion/split_reductions.h"
#include "jit/ir/program.h"
#include "jit/runtime/runtime.h"
#include "kiln/config.h"
#include "kiln/passes.h"
#include "kiln/profiler.h"

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
    profiler::ScopedTrace trace("jit loaded in process", "jit", 2);
    r.cache_hit = true;
    return;
  }
  const DiskCache cache(default_cache_dir(), cache_limit());
  try {
    profiler::ScopedTrace trace("jit disk cache", "jit", 2);
    if (std::optional<std::string> b = cache.load(key)) {
      trace.add_arg("result", "hit");
      auto so = std::make_shared<LoadedModule>(LoadedModule::load(*b));
      register_module(key, std::move(so), symbols);
      r.cache_hit = true;
      return;
    }
    trace.add_arg("result", "miss");
  } catch (const Error& e) {  // unreadable, or an entry that verified but does not load
    r.warning = str_cat("jit cache entry not used (", e.what(), "); compiling");
  }
  profiler::ScopedTrace trace("jit compile", "jit", 2);
  trace.add_arg("compiler", tc.cxx);
  const std::string bytes = compile(tc, source);
  register_module(key, std::make_shared<LoadedModule>(LoadedModule::load(bytes)), symbols);
  try {
    cache.store(key, bytes);
  } catch (const Error& e) {
    r.warning = str_cat("jit cache not written (", e.what(), ")");
  }
}

// What the stages share: the graph they rewrite and what earlier ones made.
struct JitState {
  Graph& g;
  std::vector<std::pair<std::string, std::string>> splits;  // split_reductions' parts
  Clusters cl;
  std::vector<std::string> folded;  // fold_reductions' IR lines
};

// One step of the pipeline (docs/JIT.md, "Pipeline"). An optional stage may
// be switched off (KILN_JIT_DISABLE); the others are needed for a correct
// result.
struct Stage {
  const char* name;
  bool optional;
  void (*run)(JitState&);
};

// The graph stages, in order: compile_jit's table of contents. After them,
// the kernels are emitted as C++, compiled (or found in the cache), loaded,
// and the JitKernel nodes bound to their code.
constexpr Stage kStages[] = {
    // Reductions over middle dims as row-reduction parts the clusters can take.
    {"split_reductions", true, [](JitState& s) { s.splits = split_reductions(s.g); }},
    // Views of computed values moved onto the values' inputs.
    {"sink_views", true, [](JitState& s) { sink_views(s.g); }},
    // Clusters planned, lowered to kernels and replaced by JitKernel nodes.
    {"form_clusters", false, [](JitState& s) { s.cl = form_clusters(s.g, "kiln_jit"); }},
    // Reductions of a kernel's values (leading, middle, all dims) folded in.
    {"fold_reductions", true, [](JitState& s) { s.folded = fold_reductions(s.g, s.cl); }},
    // Parts split_reductions made and no kernel took, joined again.
    {"rejoin_parts", false, [](JitState& s) { rejoin_parts(s.g, s.splits); }},
    // Nodes nothing reads any more (slices' constant operands, folds' Identities).
    {"prune", false, [](JitState& s) { prune(s.g); }},
};

// The stages KILN_JIT_DISABLE switches off (a comma-separated list of
// names); InvalidArgumentError for a name that is not an optional stage.
std::set<std::string> disabled_stages() {
  std::set<std::string> out;
  const std::string list = env("KILN_JIT_DISABLE");
  for (size_t start = 0; start <= list.size();) {
    const size_t comma = std::min(list.find(',', start), list.size());
    std::string name = list.substr(start, comma - start);
    start = comma + 1;
    if (name.empty()) continue;
    const auto it = std::find_if(std::begin(kStages), std::end(kStages),
                                 [&](const Stage& st) { return name == st.name; });
    if (it == std::end(kStages) || !it->optional) {
      std::string names;
      for (const Stage& st : kStages)
        if (st.optional) names += str_cat(names.empty() ? "" : ", ", st.name);
      throw InvalidArgumentError(str_cat(
          "KILN_JIT_DISABLE names '", name, "'",
          it == std::end(kStages) ? ", no stage of the JIT" : ", a stage every kernel needs",
          "; the stages that may be switched off are ", names));
    }
    out.insert(std::move(name));
  }
  return out;
}

// Writes `text` as `<KILN_JIT_DUMP_DIR>/<function>.<step>.txt` when that
// variable is set (a debugging aid: each stage's graph, the kernels, the
// source). A file that cannot be written is skipped.
void dump(const Graph& g, const std::string& step, const std::string& text) {
  const std::string dir = env("KILN_JIT_DUMP_DIR");
  if (dir.empty()) return;
  std::string fn = g.function_name();
  for (char& c : fn)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream(std::filesystem::path(dir) / str_cat(fn, ".", step, ".txt")) << text;
}

// Checks each JitKernel node's program against the node (Program::check).
void check_programs(const Graph& g) {
  for (const auto& n : g.nodes()) {
    if (n->op().id != OpId::JitKernel) continue;
    const Program* p = attr_object<Program>(n->op(), n->attrs(), "program");
    const std::string why = p ? p->check(n->inputs().size()) : "no program";
    if (!why.empty()) throw InternalError(str_cat("node '", n->name(), "': ", why));
  }
}

// Runs kStages over `g`; false when no cluster formed (nothing to compile).
bool run_stages(JitState& s) {
  const std::set<std::string> off = disabled_stages();
  const bool verify = config().verify_graphs, dumping = !env("KILN_JIT_DUMP_DIR").empty();
  if (dumping) dump(s.g, "00-input", s.g.debug_listing());
  int step = 0;
  for (const Stage& st : kStages) {
    ++step;
    if (off.count(st.name)) continue;
    st.run(s);
    if (verify) {
      try {
        s.g.verify();
        check_programs(s.g);
      } catch (const Error& e) {
        throw InternalError(str_cat("jit stage ", st.name, " left an invalid graph: ", e.what()));
      }
    }
    const bool clusters = std::string_view(st.name) == "form_clusters";
    if (dumping) {
      std::string text = s.g.debug_listing();
      if (clusters)
        for (const Kernel& k : compiled_kernels(s.cl)) text += k.to_string();
      dump(s.g, str_cat(step < 10 ? "0" : "", step, "-", st.name), text);
    }
    if (clusters && s.cl.kernels.empty()) return false;
  }
  return true;
}

}  // namespace

JitResult compile_jit(std::unique_ptr<Graph>& graph) {
  profiler::ScopedTrace trace([&] { return str_cat("jit ", graph->function_name()); }, "jit", 2);
  JitResult r;
  std::unique_ptr<Graph> g = graph->clone();
  JitState s{*g, {}, {}, {}};
  if (!run_stages(s)) return r;
  const Clusters& cl = s.cl;
  for (const Kernel& k : cl.kernels) r.hlo += k.to_string();
  const std::vector<Kernel> compiled = compiled_kernels(cl);
  for (const Kernel& k : compiled) r.optimized_hlo += k.to_string();
  for (const std::string& line : s.folded) {
    r.hlo += line;
    r.optimized_hlo += line;
  }
  r.source = emit_module(compiled);
  dump(*g, "source", r.source);
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
  for (const Kernel& k : compiled) symbols.push_back(k.name);
  try {
    load_module(*tc, key, r.source, symbols, r);
  } catch (const Error& e) {
    r.warning = str_cat("jit_compile: compiling function '", graph->function_name(),
                        "' failed; it runs through the graph executor instead: ", e.what());
    return r;
  }
  for (size_t i = 0; i < cl.kernel_nodes.size(); ++i) {
    Node* n = cl.kernel_nodes[i];
    auto bound = std::make_shared<Program>(*attr_object<Program>(n->op(), n->attrs(), "program"));
    bound->symbol = str_cat(key, "/", symbols[i]);
    bound->fn = find_kernel(bound->symbol);
    if (!bound->fn) throw InternalError(str_cat("jit: kernel ", bound->symbol, " did not load"));
    n->set_attrs(Attrs{AttrObjectRef(std::move(bound))});
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
