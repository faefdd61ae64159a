// Summaries for TensorBoard (TensorFlow's tf.summary): a writer of event
// files in TensorFlow's format (`events.out.tfevents.*`: TFRecord framing
// with masked CRC32C, Event protos) and the ops that write into it. Writes
// are stateful ops: eagerly they run at once; inside a Function they are
// recorded and run, in program order, on every call.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {
class Graph;
}  // namespace kiln

namespace kiln::summary {

/// How a FileWriter buffers (TensorFlow's create_file_writer arguments).
struct FileWriterOptions {
  /// Events kept in memory before they are written out.
  int64_t max_queue = 10;
  /// The longest time (ms) a written event waits before it is flushed; checked
  /// at each write and at flush()/close().
  int64_t flush_millis = 120000;
  /// Appended to the event file's name.
  std::string filename_suffix = ".v2";
};

/// A writer of one event file in a log directory (created with its parents).
/// Copies share the writer. Thread-safe; closed when the last copy and the
/// last graph holding its handle are gone.
class FileWriter {
 public:
  /// An empty writer (defined() is false).
  FileWriter() = default;
  /// Opens `logdir/events.out.tfevents.<time>.<host>.<pid>.<n><suffix>` and
  /// writes the file-version event. InvalidArgumentError when the options
  /// are out of range; FailedPreconditionError (naming the path and the
  /// reason) when `logdir` is a file or cannot be made or written.
  static FileWriter create(const std::string& logdir, const FileWriterOptions& options = {});
  /// The writer behind `handle` (a resource tensor from handle()).
  static FileWriter from_handle(const Tensor& handle);

  bool defined() const { return handle_.defined(); }
  /// The scalar resource tensor the Write* ops take.
  const Tensor& handle() const { return handle_; }
  /// The event file's path.
  const std::string& path() const;
  const std::string& logdir() const;
  /// Writes the queued events out (FlushSummaryWriter).
  void flush() const;
  /// Flushes and closes the file (CloseSummaryWriter); later writes fail.
  void close() const;
  bool closed() const;

 private:
  Tensor handle_;
};

/// TensorBoard's DataClass of a summary's tensor.
enum class DataClass { kUnknown = 0, kScalar = 1, kTensor = 2, kBlobSequence = 3 };

/// A serialized SummaryMetadata: the plugin that reads the series (e.g.
/// "scalars", "histograms", "images", "text"), its content bytes, a display
/// name, a description (Markdown) and the data class.
std::string metadata(const std::string& plugin_name, const std::string& plugin_content = "",
                     const std::string& display_name = "", const std::string& description = "",
                     DataClass data_class = DataClass::kUnknown);

/// Writes `tensor` under `tag` at `step` (an int64 scalar) with serialized
/// SummaryMetadata `summary_metadata` (TensorFlow's WriteSummary op).
void write(const FileWriter& writer, const Tensor& step, const Tensor& tensor, const Tensor& tag,
           const Tensor& summary_metadata);
/// Writes each string of `serialized` (Summary protos) as one event at
/// `step` (WriteRawProtoSummary); InvalidArgumentError for bytes that are
/// not a Summary.
void write_raw(const FileWriter& writer, const Tensor& step, const Tensor& serialized);
/// Writes a serialized GraphDef (a string scalar) as a graph event
/// (WriteGraphSummary), which TensorBoard's graph plugin shows.
void write_graph(const FileWriter& writer, const Tensor& step, const Tensor& graph_def);

/// One summary value of an Event, as read back.
struct EventValue {
  std::string tag;
  std::string plugin_name, plugin_content, display_name, description;
  DataClass data_class = DataClass::kUnknown;
  bool has_metadata = false;
  Tensor tensor;  ///< undefined for a simple_value
  bool has_simple_value = false;
  float simple_value = 0;
};

/// An Event record as read back (TensorFlow's summary_iterator).
struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;  ///< set in a file's first event
  std::string graph_def;     ///< a serialized GraphDef, for a graph event
  bool has_summary = false;
  std::vector<EventValue> values;
};

/// Parses one record of an event file; DataLossError when it is not an
/// Event (or a value's tensor is not a valid TensorProto).
Event parse_event(std::string_view record);
/// Every event of an event file, in order (the records' CRCs checked).
std::vector<Event> read_events(const std::string& path);

/// `g` as a serialized GraphDef for TensorBoard's graph plugin (write it
/// with write_graph): nodes with their op types, inputs, output dtypes and
/// shapes; no constant values, no If/While bodies.
std::string graph_def(const Graph& g);
/// Several graphs in one GraphDef, each function's nodes under its name
/// ("train/MatMul"; names made unique).
std::string graph_def(const std::vector<const Graph*>& graphs);

/// A float32 scalar under `tag` for TensorBoard's scalars plugin.
void scalar(const FileWriter& writer, const std::string& tag, const Tensor& value, int64_t step);
/// A string tensor under `tag` for TensorBoard's text plugin.
void text(const FileWriter& writer, const std::string& tag, const Tensor& value, int64_t step);

}  // namespace kiln::summary
