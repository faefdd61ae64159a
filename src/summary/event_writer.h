// Internal: the resource behind kiln::summary::FileWriter — one event file,
// a queue of serialized events, and the flush policy.
#pragma once
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/record_io.h"
#include "kiln/summary.h"
#include "kiln/tensor.h"

namespace kiln::summary::detail {

class EventWriterResource final : public Resource {
 public:
  EventWriterResource(const std::string& logdir, const FileWriterOptions& options);
  ~EventWriterResource() override;
  std::string debug_name() const override;

  /// Queues a serialized Event; writes the queue out when it is full or the
  /// flush interval has passed. FailedPreconditionError once closed.
  void write(std::string event, const char* op);
  void flush();
  void close();
  bool closed() const;
  const std::string& path() const { return path_; }
  const std::string& logdir() const { return logdir_; }

 private:
  void write_out_locked();
  mutable std::mutex mu_;
  std::string logdir_, path_;
  FileWriterOptions options_;
  std::unique_ptr<io::RecordWriter> file_;
  std::vector<std::string> queue_;
  std::chrono::steady_clock::time_point last_flush_;
};

/// The writer behind a resource tensor; InvalidArgumentError naming `op` otherwise.
EventWriterResource& writer_of(const Tensor& handle, const char* op);

/// Seconds since the epoch, as Event.wall_time.
double wall_time();

}  // namespace kiln::summary::detail
