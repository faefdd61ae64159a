// TFRecord framing (include/kiln/record_io.h) and CRC-32C: round trips with
// each compression, TensorFlow's errors for cut and corrupted files, and
// hostile lengths.
#include "kiln/record_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include "core/crc32c.h"
#include "kiln/config.h"
#include "kiln/status.h"

namespace kiln::io {
namespace {

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "kiln_record_io_" + std::to_string(::getpid()) + "_" + name;
}

std::vector<std::string> read_all(const std::string& path, Compression c = Compression::kNone,
                                  size_t buffer = 256 * 1024) {
  RecordReader r(path, c, buffer);
  std::vector<std::string> out;
  std::string rec;
  while (r.read(&rec)) out.push_back(rec);
  return out;
}

void put_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(Crc32c, KnownValuesAndBothPaths) {
  EXPECT_EQ(detail::crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(detail::crc32c_portable("123456789", 9), 0xE3069283u);
  std::mt19937 rng(3);
  std::string s(1000, '\0');
  for (char& ch : s) ch = static_cast<char>(rng());
  for (size_t n : {0, 1, 7, 8, 9, 63, 1000})
    EXPECT_EQ(detail::crc32c(s.data(), n), detail::crc32c_portable(s.data(), n)) << n;
  EXPECT_EQ(detail::unmask_crc(detail::mask_crc(0x12345678u)), 0x12345678u);
}

TEST(RecordIo, RoundTripsEachCompression) {
  const std::vector<std::string> records = {"", "a", std::string(100000, 'z'), "last"};
  for (Compression c : {Compression::kNone, Compression::kZlib, Compression::kGzip}) {
    const std::string path = temp_path("rt");
    {
      RecordWriter w(path, {c, 1});
      for (const auto& r : records) w.write(r);
    }
    EXPECT_EQ(read_all(path, c), records);
    EXPECT_EQ(read_all(path, c, 3), records);  // tiny reads
  }
  EXPECT_EQ(compression_from_string("GZIP"), Compression::kGzip);
  EXPECT_THROW(compression_from_string("LZ4"), InvalidArgumentError);
}

TEST(RecordIo, RecordsBeyondTheAllocationCapAreRefused) {
  // A small GZIP file may inflate to a huge record (the fuzzer's bomb): the
  // length is checked against the allocation cap before any byte is read.
  const std::string path = temp_path("cap");
  { RecordWriter(path, {Compression::kGzip, 6}).write(std::string(1 << 20, '\0')); }
  const int64_t before = config().max_allocation_bytes;
  config().max_allocation_bytes = 1 << 16;
  EXPECT_THROW(read_all(path, Compression::kGzip), ResourceExhaustedError);
  config().max_allocation_bytes = before;
  EXPECT_EQ(read_all(path, Compression::kGzip).at(0).size(), size_t{1} << 20);
}

TEST(RecordIo, AppendAndClose) {
  const std::string path = temp_path("append");
  { RecordWriter(path).write("one"); }
  RecordWriterOptions o;
  o.append = true;
  RecordWriter w(path, o);
  w.write("two");
  w.flush();
  EXPECT_EQ(read_all(path), (std::vector<std::string>{"one", "two"}));
  w.close();
  EXPECT_TRUE(w.closed());
  EXPECT_THROW(w.write("x"), FailedPreconditionError);
  EXPECT_THROW(RecordWriter("/nonexistent-dir/x"), NotFoundError);
  EXPECT_THROW(RecordReader("/nonexistent-file"), NotFoundError);
  EXPECT_THROW(RecordReader(testing::TempDir()), FailedPreconditionError);
  EXPECT_THROW(RecordWriter(path, {Compression::kGzip, 12}), InvalidArgumentError);
}

TEST(RecordIo, CutAndCorruptedFiles) {
  const std::string path = temp_path("bad");
  const std::string good = frame_record("hello") + frame_record("world");
  auto expect_error = [&](const std::string& bytes, const std::string& text) {
    put_bytes(path, bytes);
    try {
      read_all(path);
      ADD_FAILURE() << "no error for " << text;
    } catch (const DataLossError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_error(good.substr(0, good.size() - 2), "truncated record at 21");
  std::string bad = good;
  bad[13] ^= 1;
  expect_error(bad, "corrupted record at 12");
  bad = good;
  bad[2] ^= 1;
  expect_error(bad, "corrupted record at 0 (Is this even a TFRecord file?)");
  // A valid header declaring a huge record: refused before any allocation.
  const uint64_t n = uint64_t{1} << 40;
  std::string header(12, '\0');
  for (int i = 0; i < 8; ++i) header[i] = static_cast<char>(n >> (8 * i));
  const uint32_t crc = detail::mask_crc(detail::crc32c(header.data(), 8));
  for (int i = 0; i < 4; ++i) header[8 + i] = static_cast<char>(crc >> (8 * i));
  expect_error(header + "abc", "more than the limit");
  // A header cut short at the end is the end of a file still being written.
  put_bytes(path, good + good.substr(0, 5));
  EXPECT_EQ(read_all(path).size(), 2u);
  put_bytes(path, "\x1f\x8b\x08\x00garbage");
  EXPECT_THROW(read_all(path, Compression::kGzip), DataLossError);
}

TEST(RecordIo, RandomDamageNeverCrashes) {
  const std::string path = temp_path("fuzz");
  std::string good;
  for (int i = 0; i < 5; ++i) good += frame_record(std::string(i * 7, static_cast<char>('a' + i)));
  std::mt19937 rng(7);
  for (int k = 0; k < 300; ++k) {
    std::string bytes = good;
    for (int j = 0; j < 3; ++j) bytes[rng() % bytes.size()] ^= static_cast<char>(1 << (rng() % 8));
    put_bytes(path, bytes.substr(0, rng() % (bytes.size() + 1)));
    try {
      read_all(path);
    } catch (const DataLossError&) {
    }
  }
}

}  // namespace
}  // namespace kiln::io
