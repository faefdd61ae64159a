// The profile's outputs: the Chrome trace JSON (gzip-compressed into
// TensorBoard's plugins/profile layout) and the table of ops.
#include "profiler/writers.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>

#include "kiln/profiler.h"
#include "kiln/status.h"

namespace kiln::profiler {
namespace {

namespace fs = std::filesystem;

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

// Microseconds with ns precision ("12.345").
void append_us(std::string& out, int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", static_cast<double>(ns) / 1000.0);
  out += buf;
}

void append_kv(std::string& out, std::string_view key, std::string_view value, bool& first) {
  out += first ? "" : ",";
  first = false;
  append_json_string(out, key);
  out += ':';
  append_json_string(out, value);
}

void append_args(std::string& out, const Event& e) {
  out += ",\"args\":{";
  bool first = true;
  if (e.phase == 'C') {
    out += str_cat("\"bytes_in_use\":", static_cast<int64_t>(e.value));
    first = false;
  }
  if (!e.op.empty()) {
    append_kv(out, "op", e.op, first);
    append_kv(out, "shapes", e.shapes_string(), first);
    append_kv(out, "dtype", e.dtypes_string(), first);
    out += str_cat(",\"bytes\":", e.bytes);
  }
  for (const auto& [k, v] : e.args) append_kv(out, k, v, first);
  out += '}';
}

void append_event(std::string& out, const Event& e, int64_t pid) {
  out += "{\"name\":";
  append_json_string(out, e.name);
  out += ",\"cat\":";
  append_json_string(out, e.category);
  out += str_cat(",\"ph\":\"", e.phase, "\",\"ts\":");
  append_us(out, e.start_ns);
  if (e.phase == 'X') {
    out += ",\"dur\":";
    append_us(out, e.dur_ns);
  }
  out += str_cat(",\"pid\":", pid, ",\"tid\":", e.tid);
  append_args(out, e);
  out += '}';
}

void append_metadata(std::string& out, std::string_view what, int64_t pid, int64_t tid,
                     std::string_view name) {
  out += str_cat("{\"name\":\"", what, "\",\"ph\":\"M\",\"pid\":", pid, ",\"tid\":", tid,
                 ",\"args\":{\"name\":");
  append_json_string(out, name);
  out += "}}";
}

// A folder that exists or was made; FailedPreconditionError naming the
// first component that is not a folder.
void make_dirs(const fs::path& dir) {
  fs::path p;
  for (const fs::path& part : dir) {
    p /= part;
    std::error_code ec;
    if (fs::exists(p, ec) && !fs::is_directory(p, ec))
      throw FailedPreconditionError(str_cat(p.string(), " is not a directory"));
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw FailedPreconditionError(
        str_cat("cannot create profile directory ", dir.string(), ": ", ec.message()));
}

std::string run_name(int64_t unix_us) {
  const std::time_t t = static_cast<std::time_t>(unix_us / 1000000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y_%m_%d_%H_%M_%S", &tm);
  return buf;
}

// Writes `bytes` to `path` through a temporary file renamed into place.
void write_file(const fs::path& path, const std::string& bytes) {
  const fs::path tmp = path.string() + ".tmp";
  bool ok = false;
  if (FILE* f = std::fopen(tmp.c_str(), "wb")) {
    ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok = std::fclose(f) == 0 && ok;
  }
  std::error_code ec;
  if (ok) fs::rename(tmp, path, ec);
  if (!ok || ec) {
    fs::remove(tmp, ec);
    throw FailedPreconditionError(str_cat("cannot write profile ", path.string()));
  }
}

void write_gzip(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  gzFile f = gzopen(tmp.c_str(), "wb");
  if (!f) throw FailedPreconditionError(str_cat("cannot write profile ", tmp.string()));
  size_t done = 0;
  bool ok = true;
  while (ok && done < text.size()) {
    const unsigned n = static_cast<unsigned>(std::min<size_t>(text.size() - done, 1u << 30));
    ok = gzwrite(f, text.data() + done, n) == static_cast<int>(n);
    done += n;
  }
  ok = gzclose(f) == Z_OK && ok;
  std::error_code ec;
  if (ok) fs::rename(tmp, path, ec);
  if (!ok || ec) {
    fs::remove(tmp, ec);
    throw FailedPreconditionError(str_cat("cannot write profile ", path.string()));
  }
}

std::string fixed(double v, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

// One line of the table: the first cell left-aligned, the others right.
template <size_t N>
void append_row(std::string& out, const std::string (&cells)[N], const size_t (&widths)[N]) {
  for (size_t c = 0; c < N; ++c) {
    const size_t fill = widths[c] > cells[c].size() ? widths[c] - cells[c].size() : 0;
    if (c > 0) out.append(2 + fill, ' ');
    out += cells[c];
    if (c == 0) out.append(fill, ' ');
  }
  out += '\n';
}

}  // namespace

namespace internal {
std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}
}  // namespace internal

std::string Event::shapes_string() const {
  std::string s;
  size_t i = 0;
  for (size_t o = 0; i < shapes.size(); ++o) {
    s += o ? ";" : "";
    const int64_t rank = shapes[i++];
    if (rank < 0) {
      s += "?";
      continue;
    }
    s += '[';
    for (int64_t d = 0; d < rank && i < shapes.size(); ++d) s += str_cat(d ? "," : "", shapes[i++]);
    s += ']';
  }
  return s;
}

std::string Event::dtypes_string() const {
  std::string s;
  for (size_t i = 0; i < dtypes.size(); ++i)
    s += str_cat(i ? ";" : "", dtypes[i] == DType::kInvalid ? "?" : dtype_name(dtypes[i]));
  return s;
}

std::vector<OpStats> Profile::op_stats() const {
  std::map<std::string, OpStats> by_op;
  for (const Event& e : events) {
    if (e.phase != 'X' || e.op.empty()) continue;
    OpStats& s = by_op[e.op];
    if (s.calls == 0) {
      s.op = e.op;
      s.min_ns = e.dur_ns;
    }
    ++s.calls;
    s.total_ns += e.dur_ns;
    s.min_ns = std::min(s.min_ns, e.dur_ns);
    s.max_ns = std::max(s.max_ns, e.dur_ns);
  }
  std::vector<OpStats> v;
  for (auto& [op, s] : by_op) v.push_back(std::move(s));
  std::stable_sort(v.begin(), v.end(),
                   [](const OpStats& a, const OpStats& b) { return a.total_ns > b.total_ns; });
  return v;
}

std::string Profile::table(size_t row_limit) const {
  const std::vector<OpStats> stats = op_stats();
  int64_t total = 0, calls = 0;
  size_t width = 4;
  for (const OpStats& s : stats) {
    total += s.total_ns;
    calls += s.calls;
  }
  const size_t rows = std::min(row_limit, stats.size());
  for (size_t i = 0; i < rows; ++i)
    width = std::max(width, std::min<size_t>(stats[i].op.size(), 40));
  const size_t widths[] = {width, 8, 11, 10, 10, 10, 7};
  std::string rules[7], out;
  for (size_t c = 0; c < 7; ++c) rules[c] = std::string(widths[c], '-');
  append_row(out, rules, widths);
  append_row(out, {"Name", "Calls", "Total ms", "Avg us", "Min us", "Max us", "%"}, widths);
  append_row(out, rules, widths);
  for (size_t i = 0; i < rows; ++i) {
    const OpStats& s = stats[i];
    const std::string cells[] = {
        s.op,
        str_cat(s.calls),
        fixed(static_cast<double>(s.total_ns) / 1e6, 3),
        fixed(static_cast<double>(s.total_ns) / 1e3 / static_cast<double>(s.calls), 2),
        fixed(static_cast<double>(s.min_ns) / 1e3, 2),
        fixed(static_cast<double>(s.max_ns) / 1e3, 2),
        fixed(total ? 100.0 * static_cast<double>(s.total_ns) / static_cast<double>(total) : 0, 2)};
    append_row(out, cells, widths);
  }
  append_row(out, rules, widths);
  out += str_cat("Kernel time: ", fixed(static_cast<double>(total) / 1e6, 3), " ms in ", calls,
                 " calls of ", stats.size(), " ops",
                 rows < stats.size() ? str_cat(" (top ", rows, " shown)") : "", "\n");
  return out;
}

std::string Profile::chrome_trace_json() const {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  append_metadata(out, "process_name", pid, 0,
                  worker < 0 ? std::string("kiln") : str_cat("kiln worker ", worker));
  for (const auto& [tid, name] : threads) {
    out += ",\n";
    append_metadata(out, "thread_name", pid, tid, name.empty() ? str_cat("thread ", tid) : name);
  }
  for (const Event& e : events) {
    out += ",\n";
    append_event(out, e, pid);
  }
  out +=
      str_cat("\n],\"otherData\":{\"producer\":\"kiln\",\"start_unix_us\":", start_unix_us, "}}\n");
  return out;
}

std::string Profile::save(const std::string& logdir) const {
  KILN_CHECK_ARG(!logdir.empty(), "profiler: logdir must not be empty");
  const fs::path base = fs::path(logdir) / "plugins" / "profile";
  make_dirs(base);
  const std::string run = run_name(start_unix_us);
  const std::string stem =
      str_cat(internal::host_name(), worker < 0 ? std::string() : str_cat("_worker", worker));
  const std::string file = stem + ".trace.json.gz";
  fs::path dir = base / run;
  std::error_code ec;
  for (int i = 1; fs::exists(dir / file, ec); ++i) dir = base / str_cat(run, "_", i);
  make_dirs(dir);
  write_file(dir / (stem + ".xplane.pb"), xspace());
  const fs::path path = dir / file;
  write_gzip(path, chrome_trace_json());
  return path.string();
}

}  // namespace kiln::profiler
