// kiln.profiler's C++ side (include/kiln/profiler.h): start/stop, the
// recorded Profile, and Python's Trace annotations.
#include "kiln/profiler.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace kiln::py {
namespace {

using profiler::Event;
using profiler::Profile;

nb::dict event_dict(const Event& e) {
  nb::dict d;
  d["name"] = e.name;
  d["cat"] = e.category;
  d["ph"] = std::string(1, e.phase);
  d["start_ns"] = e.start_ns;
  d["dur_ns"] = e.dur_ns;
  d["tid"] = e.tid;
  if (!e.op.empty()) {
    d["op"] = e.op;
    d["shapes"] = e.shapes_string();
    d["dtype"] = e.dtypes_string();
    d["bytes"] = e.bytes;
  }
  if (e.phase == 'C') d["value"] = e.value;
  nb::dict args;
  for (const auto& [k, v] : e.args) args[k.c_str()] = v;
  d["args"] = args;
  return d;
}

}  // namespace

void bind_profiler(nb::module_& m) {
  nb::class_<Profile>(m, "ProfileResult")
      .def("table", &Profile::table, nb::arg("row_limit") = 20)
      .def("chrome_trace_json", &Profile::chrome_trace_json)
      .def("xspace",
           [](const Profile& p) {
             const std::string s = p.xspace();
             return nb::bytes(s.data(), s.size());
           })
      .def("save", &Profile::save, nb::arg("logdir"), nb::call_guard<nb::gil_scoped_release>())
      .def("events",
           [](const Profile& p) {
             nb::list out;
             for (const Event& e : p.events) out.append(event_dict(e));
             return out;
           })
      .def("op_stats",
           [](const Profile& p) {
             std::vector<std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>> out;
             for (const auto& s : p.op_stats())
               out.emplace_back(s.op, s.calls, s.total_ns, s.min_ns, s.max_ns);
             return out;
           })
      .def_ro("pid", &Profile::pid)
      .def_ro("worker", &Profile::worker)
      .def_ro("start_unix_us", &Profile::start_unix_us)
      .def_prop_ro("num_events", [](const Profile& p) { return p.events.size(); });

  m.def(
      "profiler_start",
      [](int host, int python, int device, int64_t delay_ms, int worker) {
        profiler::ProfilerOptions o;
        o.worker = worker;
        o.host_tracer_level = host;
        o.python_tracer_level = python;
        o.device_tracer_level = device;
        o.delay_ms = delay_ms;
        profiler::start(o);
      },
      nb::arg("host_tracer_level") = 2, nb::arg("python_tracer_level") = 0,
      nb::arg("device_tracer_level") = 1, nb::arg("delay_ms") = 0, nb::arg("worker") = -1);
  m.def("profiler_stop", &profiler::stop);
  m.def("profiler_enabled", [] { return profiler::is_enabled(); });
  m.def("profiler_now_ns", &profiler::now_ns);
  // Python's Trace: an annotation from start_ns (profiler_now_ns) to now.
  m.def(
      "profiler_record",
      [](std::string name, int64_t start_ns,
         std::vector<std::pair<std::string, std::string>> args) {
        if (!profiler::is_enabled()) return;
        Event e;
        e.dur_ns = profiler::now_ns() - start_ns;
        e.start_ns = start_ns;
        e.name = std::move(name);
        e.category = "user";
        e.args = std::move(args);
        profiler::detail::record(std::move(e));
      },
      nb::arg("name"), nb::arg("start_ns"), nb::arg("args"));
}

}  // namespace kiln::py
