// The profile as an XSpace (xplane.proto): what TensorBoard's profile plugin
// (XProf) reads. One plane "/host:CPU" with a line per thread; kernels are
// named "<node>:<op type>" as TensorFlow's op events are, so the plugin's
// framework op stats list them with their op types.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

#include "kiln/profiler.h"
#include "kiln/status.h"
#include "profiler/writers.h"
#include "xplane.pb.h"

namespace kiln::profiler {
namespace {

namespace xp = tensorflow::profiler;

// Interns event and stat metadata by name in one plane.
class PlaneBuilder {
 public:
  explicit PlaneBuilder(xp::XPlane* plane) : plane_(plane) {}

  int64_t event_id(const std::string& name) {
    return intern(events_, *plane_->mutable_event_metadata(), name);
  }
  int64_t stat_id(const std::string& name) {
    return intern(stats_, *plane_->mutable_stat_metadata(), name);
  }

  void add_str(xp::XEvent* e, const std::string& key, const std::string& value) {
    xp::XStat* s = e->add_stats();
    s->set_metadata_id(stat_id(key));
    s->set_str_value(value);
  }

  void add_int(xp::XEvent* e, const std::string& key, int64_t value) {
    xp::XStat* s = e->add_stats();
    s->set_metadata_id(stat_id(key));
    s->set_int64_value(value);
  }

 private:
  // The id of `name` in `metadata` (keyed by id), added on first use.
  template <typename Metadata>
  static int64_t intern(std::unordered_map<std::string, int64_t>& ids,
                        google::protobuf::Map<int64_t, Metadata>& metadata,
                        const std::string& name) {
    auto [it, fresh] = ids.try_emplace(name, static_cast<int64_t>(ids.size()) + 1);
    if (fresh) {
      Metadata& m = metadata[it->second];
      m.set_id(it->second);
      m.set_name(name);
    }
    return it->second;
  }

  xp::XPlane* plane_;
  std::unordered_map<std::string, int64_t> events_, stats_;
};

// TensorFlow's op event name: "<node>:<op type>" (eager ops: "<op>:<op>"); a
// kernel inside a function run on its thread is scoped by the function's name
// ("step/Relu:_FusedConv2D"), so the plugin, which groups ops by name, does not
// merge nodes of one name from different functions or with eager ops.
std::string event_name(const Event& e, const Event* function) {
  if (e.op.empty()) return e.name;
  const std::string& node = e.name.empty() ? e.op : e.name;
  if (function == nullptr || e.category != "kernel") return str_cat(node, ":", e.op);
  return str_cat(function->name, "/", node, ":", e.op);
}

// A thread's line and its enclosing function runs (innermost last).
struct LineState {
  xp::XLine* line = nullptr;
  std::vector<const Event*> functions;

  const Event* enclosing(const Event& e) {
    while (!functions.empty() &&
           functions.back()->start_ns + functions.back()->dur_ns < e.start_ns + e.dur_ns)
      functions.pop_back();
    return functions.empty() ? nullptr : functions.back();
  }
};

void add_event(PlaneBuilder& b, LineState& state, const Event& e) {
  const Event* function = state.enclosing(e);
  if (e.category == "function") state.functions.push_back(&e);
  xp::XEvent* x = state.line->add_events();
  x->set_metadata_id(b.event_id(event_name(e, function)));
  x->set_offset_ps(e.start_ns * 1000);
  x->set_duration_ps(e.dur_ns * 1000);
  b.add_str(x, "category", e.category);
  if (!e.op.empty()) {
    b.add_str(x, "shapes", e.shapes_string());
    b.add_str(x, "dtype", e.dtypes_string());
    b.add_int(x, "bytes", e.bytes);
    b.add_int(x, "is_eager", e.category == "eager" ? 1 : 0);
  }
  for (const auto& [k, v] : e.args) b.add_str(x, k, v);
}

}  // namespace

std::string Profile::xspace() const {
  xp::XSpace space;
  space.add_hostnames(internal::host_name());
  xp::XPlane* plane = space.add_planes();
  plane->set_id(0);
  plane->set_name("/host:CPU");
  PlaneBuilder builder(plane);
  std::map<int64_t, std::string> names(threads.begin(), threads.end());
  std::map<int64_t, LineState> lines;
  int64_t end_ns = 0;
  for (const Event& e : events) {
    if (e.phase != 'X') continue;  // counters have no XEvent form the plugin reads
    LineState& state = lines[e.tid];
    xp::XLine*& line = state.line;
    if (line == nullptr) {
      line = plane->add_lines();
      line->set_id(e.tid);
      line->set_display_id(e.tid);
      const std::string& name = names[e.tid];
      line->set_name(name.empty() ? str_cat("thread ", e.tid) : name);
      line->set_timestamp_ns(start_unix_us * 1000);
    }
    add_event(builder, state, e);
    end_ns = std::max(end_ns, e.start_ns + e.dur_ns);
  }
  for (auto& [tid, state] : lines) state.line->set_duration_ps(end_ns * 1000);
  // Deterministic: the metadata maps in id order, so one profile gives one file.
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    space.SerializeToCodedStream(&coded);
  }
  return out;
}

}  // namespace kiln::profiler
