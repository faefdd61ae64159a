// The pass driver: the pipeline, in order, each pass switchable by name.
#include <array>
#include <chrono>

#include "kiln/passes.h"
#include "kiln/profiler.h"

namespace kiln {
namespace {

struct PassEntry {
  std::string_view name;
  PassResult (*run)(Graph&, const OptimizeOptions&);
};

// The pipeline. inline runs first so that every other pass sees across
// function calls. prune runs again to drop what simplification orphaned (so
// that fuse_attention sees the uses that remain) and what fuse_attention did; fusion runs on the
// final graph: convolution epilogues first, so that elementwise fusion does not take their ops.
// Collectives are scheduled last.
constexpr PassEntry kPipeline[] = {
    {"inline", [](Graph& g, const OptimizeOptions&) { return inline_calls(g); }},
    {"prune", [](Graph& g, const OptimizeOptions&) { return prune(g); }},
    {"fold_constants",
     [](Graph& g, const OptimizeOptions& o) { return fold_constants(g, o.max_fold_elements); }},
    {"cse", [](Graph& g, const OptimizeOptions&) { return cse(g); }},
    {"simplify", [](Graph& g, const OptimizeOptions&) { return simplify(g); }},
    {"fold_pad", [](Graph& g, const OptimizeOptions&) { return fold_pad(g); }},
    {"conv_float_filters", [](Graph& g, const OptimizeOptions&) { return conv_float_filters(g); }},
    {"matmul_float_weights",
     [](Graph& g, const OptimizeOptions&) { return matmul_float_weights(g); }},
    {"prune", [](Graph& g, const OptimizeOptions&) { return prune(g); }},
    // Again: values simplify made equal (a loaded graph's Identity nodes bypassed,
    // two Casts of one value then) are one before the fusions match patterns.
    {"cse", [](Graph& g, const OptimizeOptions&) { return cse(g); }},
    {"fuse_attention", [](Graph& g, const OptimizeOptions&) { return fuse_attention(g); }},
    {"fuse_rnn", [](Graph& g, const OptimizeOptions&) { return fuse_rnn(g); }},
    {"prune", [](Graph& g, const OptimizeOptions&) { return prune(g); }},
    {"fuse_conv", [](Graph& g, const OptimizeOptions&) { return fuse_conv(g); }},
    {"fuse", [](Graph& g, const OptimizeOptions&) { return fuse_elementwise(g); }},
    {"schedule_collectives",
     [](Graph& g, const OptimizeOptions&) { return schedule_collectives(g); }},
};

constexpr auto kNames = [] {
  std::array<std::string_view, std::size(kPipeline)> a{};
  for (size_t i = 0; i < a.size(); ++i) a[i] = kPipeline[i].name;
  return a;
}();

std::string examples(const std::vector<NodeRef>& v, size_t max_examples) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < max_examples; ++i)
    s += str_cat(i ? ", " : "", "'", v[i].first, "' (", v[i].second, ")");
  if (v.size() > max_examples) s += ", ...";
  return s;
}

}  // namespace

std::span<const std::string_view> pass_names() {
  return kNames;
}

std::string PassResult::summary(size_t max_examples) const {
  if (!changed()) return "no change";
  std::string s;
  auto part = [&](const char* what, const std::vector<NodeRef>& v) {
    if (v.empty()) return;
    s += str_cat(s.empty() ? "" : "; ", what, " ", v.size(), " (", examples(v, max_examples), ")");
  };
  part("removed", removed);
  part("added", added);
  part("rewritten", rewritten);
  return s;
}

std::vector<NodeRef> OptimizeReport::unused_ops() const {
  for (const PassResult& p : passes) {
    if (p.pass != "prune") continue;
    std::vector<NodeRef> v;
    for (const NodeRef& n : p.removed)
      if (const OpDef* op = find_op(n.second); !op || !op->has(kSource)) v.push_back(n);
    return v;
  }
  return {};
}

std::string OptimizeReport::to_string() const {
  std::string s =
      str_cat("optimize '", function_name, "': ", nodes_before, " -> ", nodes_after, " nodes\n");
  for (const PassResult& p : passes) s += str_cat("  ", p.pass, ": ", p.summary(), "\n");
  return s;
}

OptimizeReport optimize(Graph& g, const OptimizeOptions& opts) {
  for (const std::string& d : opts.disabled) {
    bool known = false;
    for (std::string_view n : kNames) known |= n == d;
    if (!known) {
      std::string names;
      for (std::string_view n : kNames)
        if (names.find(str_cat("'", n, "'")) == std::string::npos)
          names += str_cat(names.empty() ? "" : ", ", "'", n, "'");
      throw InvalidArgumentError(
          str_cat("optimize: unknown pass '", d, "' in disabled; passes are ", names));
    }
  }
  // "fuse" names fusion as a whole (check_numerics turns it off).
  auto skipped = [&](std::string_view name) {
    if (name == "fuse" && !opts.elementwise_fusion) return true;
    return opts.disabled.count(std::string(name)) ||
           (name.starts_with("fuse") && opts.disabled.count("fuse"));
  };
  OptimizeReport report;
  report.function_name = g.function_name();
  report.nodes_before = g.num_nodes();
  for (const PassEntry& p : kPipeline) {
    if (skipped(p.name)) continue;
    profiler::ScopedTrace trace(p.name, "optimize", 2);
    const auto start = std::chrono::steady_clock::now();
    PassResult r = p.run(g, opts);
    r.pass = std::string(p.name);
    r.millis =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (opts.verify) {
      try {
        g.verify();
      } catch (const Error& e) {
        throw InternalError(str_cat("optimize: pass '", p.name, "' left graph '", g.function_name(),
                                    "' invalid: ", e.what()));
      }
    }
    report.passes.push_back(std::move(r));
  }
  report.nodes_after = g.num_nodes();
  return report;
}

}  // namespace kiln
