// TFRecord files: TensorFlow's record framing (tf.io.TFRecordWriter,
// tf.data.TFRecordDataset). Each record is its length (uint64, little endian),
// the masked CRC-32C of those 8 bytes, the bytes, and their masked CRC-32C;
// the whole stream may be ZLIB- or GZIP-compressed. Event files (TensorBoard)
// use the same framing.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace kiln::io {

enum class Compression { kNone, kZlib, kGzip };

/// "" (or "NONE"), "ZLIB" or "GZIP"; InvalidArgumentError for anything else.
Compression compression_from_string(std::string_view name);

struct RecordWriterOptions {
  Compression compression = Compression::kNone;
  int compression_level = -1;  ///< zlib's 0-9, -1 its default
  bool append = false;         ///< add to the end of an existing file
};

/// Writes records to a file. Errors (NotFoundError for a missing directory,
/// FailedPreconditionError otherwise, and after close()) name the path.
class RecordWriter {
 public:
  explicit RecordWriter(const std::string& path, RecordWriterOptions options = {});
  ~RecordWriter();  ///< closes; errors are dropped (call close() to see them)
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  void write(std::string_view record);
  /// Hands what is buffered (a compressed stream's pending block too) to the OS.
  void flush();
  /// Finishes the stream and closes the file; later writes fail.
  void close();
  bool closed() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Reads records in order. A partial length header at the very end is taken
/// as the end (a file still being written); a record cut short is
/// DataLossError "truncated record at N", a checksum mismatch "corrupted
/// record at N" (N the record's byte offset in the uncompressed stream).
class RecordReader {
 public:
  /// NotFoundError when `path` is missing, FailedPreconditionError when it
  /// is a directory or unreadable. `buffer_size` is the read size (bytes).
  explicit RecordReader(const std::string& path, Compression compression = Compression::kNone,
                        size_t buffer_size = 256 * 1024);
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  /// The next record into *out; false at the end of the file.
  bool read(std::string* out);
  /// Bytes of the uncompressed stream consumed so far.
  uint64_t offset() const;

  /// Records larger than this are refused as corrupt (a hostile length).
  static constexpr uint64_t kMaxRecordBytes = uint64_t{1} << 32;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The framing of one record (header + bytes + footer), uncompressed.
std::string frame_record(std::string_view record);

}  // namespace kiln::io
