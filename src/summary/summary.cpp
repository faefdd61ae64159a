// kiln::summary: the FileWriter front end, SummaryMetadata, the front
// functions of the summary ops and their CPU kernels (bound by the registry).
#include "kiln/summary.h"

#include "event_writer.h"
#include "kiln/context.h"
#include "kiln/ops.h"
#include "saved_model/proto_io.h"
#include "summary.pb.h"
#include "summary_kernels.h"

namespace kiln::summary {
namespace {

using detail::EventWriterResource;
using detail::writer_of;

EventWriterResource& resource(const Tensor& handle) {
  return writer_of(handle, "FileWriter");
}

int64_t step_of(const KernelContext& c) {
  return c.input(1).data<int64_t>()[0];
}

std::string event_with(double wall, int64_t step, tbproto::Summary* summary) {
  tbproto::Event e;
  e.set_wall_time(wall);
  e.set_step(step);
  if (summary) e.mutable_summary()->Swap(summary);
  return e.SerializeAsString();
}

void write_kernel(KernelContext& c) {
  const char* op = c.op().type_name;
  EventWriterResource& w = writer_of(c.input(0), op);
  tbproto::Summary s;
  tbproto::Summary::Value* v = s.add_value();
  v->set_tag(c.input(3).data<std::string>()[0]);
  const std::string& meta = c.input(4).data<std::string>()[0];
  if (!meta.empty() && !v->mutable_metadata()->ParseFromString(meta))
    c.fail("summary_metadata is not a serialized SummaryMetadata");
  saved_model::detail::pb::TensorProto t;
  saved_model::detail::to_proto(c.input(2), &t);
  v->set_tensor(t.SerializeAsString());
  w.write(event_with(detail::wall_time(), step_of(c), &s), op);
}

void write_raw_kernel(KernelContext& c) {
  const char* op = c.op().type_name;
  EventWriterResource& w = writer_of(c.input(0), op);
  const Tensor& t = c.input(2);
  const std::string* items = t.data<std::string>();
  // Every item is checked before any is written.
  std::vector<tbproto::Summary> parsed(static_cast<size_t>(t.num_elements()));
  for (int64_t i = 0; i < t.num_elements(); ++i)
    if (!parsed[static_cast<size_t>(i)].ParseFromString(items[i]))
      c.fail("item ", i, " of tensor is not a serialized Summary proto");
  for (tbproto::Summary& s : parsed) w.write(event_with(detail::wall_time(), step_of(c), &s), op);
}

void write_graph_kernel(KernelContext& c) {
  const char* op = c.op().type_name;
  EventWriterResource& w = writer_of(c.input(0), op);
  tbproto::Event e;
  e.set_wall_time(detail::wall_time());
  e.set_step(step_of(c));
  e.set_graph_def(c.input(2).data<std::string>()[0]);
  w.write(e.SerializeAsString(), op);
}

void flush_kernel(KernelContext& c) {
  writer_of(c.input(0), c.op().type_name).flush();
}

void close_kernel(KernelContext& c) {
  writer_of(c.input(0), c.op().type_name).close();
}

Tensor string_scalar(const std::string& s) {
  return Tensor(s);
}

void run(OpId id, std::initializer_list<Tensor> inputs) {
  call_op(id, std::span<const Tensor>(inputs.begin(), inputs.size()));
}

}  // namespace

FileWriter FileWriter::create(const std::string& logdir, const FileWriterOptions& options) {
  FileWriter w;
  auto* res = new EventWriterResource(logdir, options);
  w.handle_ = Tensor::empty(DType::kResource, Shape());
  // The handle's buffer adopts the creation reference (Buffer unrefs it).
  *static_cast<Resource**>(w.handle_.mutable_raw_data()) = res;
  return w;
}

FileWriter FileWriter::from_handle(const Tensor& handle) {
  writer_of(handle, "FileWriter::from_handle");
  FileWriter w;
  w.handle_ = handle;
  return w;
}

const std::string& FileWriter::path() const {
  return resource(handle_).path();
}
const std::string& FileWriter::logdir() const {
  return resource(handle_).logdir();
}
void FileWriter::flush() const {
  run(OpId::FlushSummaryWriter, {handle_});
}
void FileWriter::close() const {
  run(OpId::CloseSummaryWriter, {handle_});
}
bool FileWriter::closed() const {
  return resource(handle_).closed();
}

std::string metadata(const std::string& plugin_name, const std::string& plugin_content,
                     const std::string& display_name, const std::string& description,
                     DataClass data_class) {
  tbproto::SummaryMetadata m;
  m.mutable_plugin_data()->set_plugin_name(plugin_name);
  m.mutable_plugin_data()->set_content(plugin_content);
  m.set_display_name(display_name);
  m.set_summary_description(description);
  m.set_data_class(static_cast<tbproto::DataClass>(data_class));
  return m.SerializeAsString();
}

void write(const FileWriter& writer, const Tensor& step, const Tensor& tensor, const Tensor& tag,
           const Tensor& summary_metadata) {
  run(OpId::WriteSummary, {writer.handle(), step, tensor, tag, summary_metadata});
}

void write_raw(const FileWriter& writer, const Tensor& step, const Tensor& serialized) {
  run(OpId::WriteRawProtoSummary, {writer.handle(), step, serialized});
}

void write_graph(const FileWriter& writer, const Tensor& step, const Tensor& graph_def) {
  run(OpId::WriteGraphSummary, {writer.handle(), step, graph_def});
}

void scalar(const FileWriter& writer, const std::string& tag, const Tensor& value, int64_t step) {
  write(writer, Tensor(step), cast(value, DType::kFloat32), string_scalar(tag),
        string_scalar(metadata("scalars", "", "", "", DataClass::kScalar)));
}

void text(const FileWriter& writer, const std::string& tag, const Tensor& value, int64_t step) {
  write(writer, Tensor(step), value, string_scalar(tag),
        string_scalar(metadata("text", "", "", "", DataClass::kTensor)));
}

Event parse_event(std::string_view record) {
  namespace sd = saved_model::detail;
  tbproto::Event e;
  if (!sd::parse(e, std::string(record)))
    throw DataLossError("summary event: the record is not an Event proto");
  Event out;
  out.wall_time = e.wall_time();
  out.step = e.step();
  out.file_version = e.file_version();
  out.graph_def = e.graph_def();
  out.has_summary = e.has_summary();
  for (const tbproto::Summary::Value& v : e.summary().value()) {
    EventValue x;
    x.tag = v.tag();
    x.has_metadata = v.has_metadata();
    x.plugin_name = v.metadata().plugin_data().plugin_name();
    x.plugin_content = v.metadata().plugin_data().content();
    x.display_name = v.metadata().display_name();
    x.description = v.metadata().summary_description();
    x.data_class = static_cast<DataClass>(v.metadata().data_class());
    x.has_simple_value = v.has_simple_value();
    x.simple_value = v.simple_value();
    if (v.has_tensor()) {
      sd::pb::TensorProto t;
      if (!sd::parse(t, v.tensor()))
        throw DataLossError(
            str_cat("summary event: the tensor of '", v.tag(), "' is not a TensorProto"));
      x.tensor = sd::from_proto(t, str_cat("summary event '", v.tag(), "'"));
    }
    out.values.push_back(std::move(x));
  }
  return out;
}

std::vector<Event> read_events(const std::string& path) {
  io::RecordReader r(path);
  std::vector<Event> out;
  std::string record;
  while (r.read(&record)) out.push_back(parse_event(record));
  return out;
}

void bind_summary_kernels(OpTableBuilder& t) {
  t.kernel(OpId::WriteSummary, write_kernel);
  t.kernel(OpId::WriteRawProtoSummary, write_raw_kernel);
  t.kernel(OpId::WriteGraphSummary, write_graph_kernel);
  t.kernel(OpId::FlushSummaryWriter, flush_kernel);
  t.kernel(OpId::CloseSummaryWriter, close_kernel);
}

}  // namespace kiln::summary
