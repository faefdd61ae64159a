#include "event_writer.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "summary.pb.h"

namespace kiln::summary::detail {
namespace {

std::atomic<int64_t> g_next_writer{0};

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// logdir made with its parents; FailedPreconditionError naming what is wrong.
void make_logdir(const std::string& logdir) {
  namespace fs = std::filesystem;
  if (logdir.empty()) throw InvalidArgumentError("create_file_writer: logdir is empty");
  std::error_code ec;
  if (fs::exists(logdir, ec) && !fs::is_directory(logdir, ec))
    throw FailedPreconditionError(
        str_cat("create_file_writer: logdir '", logdir, "' exists and is not a directory"));
  fs::create_directories(logdir, ec);
  if (ec)
    throw FailedPreconditionError(
        str_cat("create_file_writer: cannot create logdir '", logdir, "': ", ec.message()));
}

std::string event_file_name(const FileWriterOptions& o) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const int64_t secs = std::chrono::duration_cast<std::chrono::seconds>(now).count();
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%010lld", static_cast<long long>(secs));
  return str_cat("events.out.tfevents.", stamp, ".", host_name(), ".", ::getpid(), ".",
                 g_next_writer.fetch_add(1), o.filename_suffix);
}

}  // namespace

double wall_time() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(now).count();
}

EventWriterResource::EventWriterResource(const std::string& logdir,
                                         const FileWriterOptions& options)
    : logdir_(logdir), options_(options), last_flush_(std::chrono::steady_clock::now()) {
  if (options.max_queue < 0)
    throw InvalidArgumentError(
        str_cat("create_file_writer: max_queue must be >= 0, got ", options.max_queue));
  if (options.flush_millis < 0)
    throw InvalidArgumentError(
        str_cat("create_file_writer: flush_millis must be >= 0, got ", options.flush_millis));
  if (options.filename_suffix.find('/') != std::string::npos)
    throw InvalidArgumentError(str_cat("create_file_writer: filename_suffix '",
                                       options.filename_suffix, "' contains a '/'"));
  make_logdir(logdir);
  path_ = str_cat(logdir, "/", event_file_name(options));
  try {
    file_ = std::make_unique<io::RecordWriter>(path_);
  } catch (const Error& e) {
    throw FailedPreconditionError(
        str_cat("create_file_writer: cannot write in logdir '", logdir, "': ", e.what()));
  }
  tbproto::Event first;
  first.set_wall_time(wall_time());
  first.set_file_version("brain.Event:2");
  file_->write(first.SerializeAsString());
  file_->flush();
}

EventWriterResource::~EventWriterResource() {
  try {
    close();
  } catch (...) {  // a destructor reports nothing; close() shows errors
  }
}

std::string EventWriterResource::debug_name() const {
  return str_cat("SummaryWriter '", path_, "'");
}

void EventWriterResource::write(std::string event, const char* op) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_)
    throw FailedPreconditionError(
        str_cat(op, ": the summary writer for '", logdir_, "' is closed"));
  queue_.push_back(std::move(event));
  const auto waited = std::chrono::steady_clock::now() - last_flush_;
  if (static_cast<int64_t>(queue_.size()) > options_.max_queue ||
      waited >= std::chrono::milliseconds(options_.flush_millis))
    write_out_locked();
}

void EventWriterResource::write_out_locked() {
  // Whole records only: each event is framed and written as one record.
  for (const std::string& e : queue_) file_->write(e);
  queue_.clear();
  file_->flush();
  last_flush_ = std::chrono::steady_clock::now();
}

void EventWriterResource::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_) write_out_locked();
}

void EventWriterResource::close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) return;
  std::unique_ptr<io::RecordWriter> f = std::move(file_);
  for (const std::string& e : queue_) f->write(e);
  queue_.clear();
  f->close();
}

bool EventWriterResource::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return file_ == nullptr;
}

EventWriterResource& writer_of(const Tensor& handle, const char* op) {
  Resource* r = handle.defined() && !handle.is_symbolic() && handle.dtype() == DType::kResource &&
                        handle.num_elements() == 1
                    ? handle.resource()
                    : nullptr;
  auto* w = dynamic_cast<EventWriterResource*>(r);
  if (!w)
    throw InvalidArgumentError(str_cat(op, ": writer is not a summary writer",
                                       r ? str_cat(" (got ", r->debug_name(), ")") : ""));
  return *w;
}

}  // namespace kiln::summary::detail
