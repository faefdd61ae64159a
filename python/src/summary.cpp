// kiln.summary's C++ side: event-file writers (include/kiln/summary.h),
// SummaryMetadata bytes, and a reader of event files (as dicts).
#include "kiln/summary.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <memory>
#include <mutex>

#include "bindings.h"
#include "kiln/function.h"

namespace kiln::py {
namespace {

nb::bytes to_bytes(const std::string& s) {
  return nb::bytes(s.data(), s.size());
}

nb::dict event_dict(const summary::Event& e) {
  nb::dict d;
  d["wall_time"] = e.wall_time;
  d["step"] = e.step;
  if (!e.file_version.empty()) d["file_version"] = e.file_version;
  if (!e.graph_def.empty()) d["graph_def"] = to_bytes(e.graph_def);
  if (!e.has_summary) return d;
  nb::list values;
  for (const summary::EventValue& v : e.values) {
    nb::dict x;
    x["tag"] = v.tag;
    if (v.has_metadata) {
      nb::dict m;
      m["plugin_name"] = v.plugin_name;
      m["plugin_content"] = to_bytes(v.plugin_content);
      m["display_name"] = v.display_name;
      m["summary_description"] = v.description;
      m["data_class"] = static_cast<int>(v.data_class);
      x["metadata"] = m;
    }
    if (v.has_simple_value) x["simple_value"] = v.simple_value;
    if (v.tensor.defined()) x["tensor"] = v.tensor;
    values.append(x);
  }
  d["summary"] = values;
  return d;
}

// tf.summary.trace_on's record: the concrete functions run since, once each.
std::mutex g_trace_mu;
std::vector<std::weak_ptr<const ConcreteFunction>>& traced() {
  static auto* v = new std::vector<std::weak_ptr<const ConcreteFunction>>;
  return *v;
}

void record_call(const ConcreteFunction& cf) {
  std::lock_guard<std::mutex> lock(g_trace_mu);
  for (const auto& w : traced())
    if (w.lock().get() == &cf) return;
  traced().push_back(cf.weak_from_this());
}

// The recorded functions' traced graphs as one GraphDef (empty bytes when none).
nb::bytes traced_graph_def() {
  std::vector<std::shared_ptr<const ConcreteFunction>> keep;
  {
    std::lock_guard<std::mutex> lock(g_trace_mu);
    for (const auto& w : traced())
      if (auto cf = w.lock()) keep.push_back(std::move(cf));
  }
  if (keep.empty()) return nb::bytes("", 0);
  std::vector<const Graph*> graphs;
  for (const auto& cf : keep) graphs.push_back(&cf->graph());
  return to_bytes(summary::graph_def(graphs));
}

}  // namespace

void bind_summary(nb::module_& m) {
  m.def(
      "_summary_writer",
      [](const std::string& logdir, int64_t max_queue, int64_t flush_millis,
         const std::string& suffix) {
        summary::FileWriterOptions o;
        o.max_queue = max_queue;
        o.flush_millis = flush_millis;
        o.filename_suffix = suffix;
        summary::FileWriter w = summary::FileWriter::create(logdir, o);
        return nb::make_tuple(w.handle(), w.path());
      },
      nb::arg("logdir"), nb::arg("max_queue"), nb::arg("flush_millis"), nb::arg("suffix"));
  m.def("_summary_writer_closed",
        [](const Tensor& handle) { return summary::FileWriter::from_handle(handle).closed(); });
  m.def(
      "_summary_metadata",
      [](const std::string& plugin, const nb::bytes& content, const std::string& display,
         const std::string& description, int data_class) {
        if (data_class < 0 || data_class > 3)
          throw InvalidArgumentError(str_cat("data_class must be 0-3, got ", data_class));
        return to_bytes(summary::metadata(plugin, std::string(content.c_str(), content.size()),
                                          display, description,
                                          static_cast<summary::DataClass>(data_class)));
      },
      nb::arg("plugin_name"), nb::arg("content") = nb::bytes(""), nb::arg("display_name") = "",
      nb::arg("description") = "", nb::arg("data_class") = 0);
  m.def("_summary_trace_on", [] {
    {
      std::lock_guard<std::mutex> lock(g_trace_mu);
      traced().clear();
    }
    set_call_observer(record_call);
  });
  m.def("_summary_trace_off", [] {
    set_call_observer(nullptr);
    std::lock_guard<std::mutex> lock(g_trace_mu);
    traced().clear();
  });
  m.def("_summary_traced_graph_def", &traced_graph_def);
  m.def("_parse_event", [](const nb::bytes& b) {
    return event_dict(summary::parse_event(std::string_view(b.c_str(), b.size())));
  });
  m.def("_read_events", [](const std::string& path) {
    nb::list out;
    for (const summary::Event& e : summary::read_events(path)) out.append(event_dict(e));
    return out;
  });
}

}  // namespace kiln::py
