// Internal: the decoders fuzz target's body (tests/fuzz/decoders_fuzz.cpp),
// shared with the CTest replay of its corpus (tests/cpp/io/decoders_fuzz_corpus_test.cpp).
//
// An input is one selector byte, then the bytes to decode. The selector's low
// nibble picks the decoder, its high nibble (`opt`) varies attributes:
//   0 tf.train.Example wire scanner (_ParseExampleDense, _ParseExampleVarLen)
//   1 SequenceExample feature lists (_ParseSequenceFeatureList, and the context)
//   2 DecodePng   3 DecodeJpeg   4 DecodeImage
//   5 DecodeRaw / DecodePaddedRaw
//   6 ParseTensor (TensorProto bytes)
//   7 UnicodeDecode(WithOffsets), UnicodeTranscode from UTF-8, UTF-16-BE, UTF-32-BE
//   8 the TFRecord reader (plain, ZLIB, GZIP) over the bytes as a file
// Seeds: tests/fuzz/make_decoder_seeds.py. A decode may fail with a kiln error
// (or another std::exception); anything else (a crash, a sanitizer report, an
// allocation past -rss_limit_mb, a hang) is a bug.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "kiln/config.h"
#include "kiln/kiln.h"
#include "kiln/record_io.h"

namespace kiln::fuzz::decoders {
namespace {
using kiln::Attrs;
using kiln::DType;
using kiln::OpId;
using kiln::Shape;
using kiln::Tensor;

// KILN_DECODERS_FUZZ_VERBOSE=1 prints each error (to check that seeds decode).
bool verbose() {
  static const bool v = std::getenv("KILN_DECODERS_FUZZ_VERBOSE") != nullptr;
  return v;
}

template <class F>
void guarded(F&& f) {
  try {
    f();
    if (verbose()) std::fprintf(stderr, "  ok\n");
  } catch (const std::exception& e) {
    if (verbose()) std::fprintf(stderr, "  error: %s\n", e.what());
  }
}

void op(OpId id, const std::vector<Tensor>& inputs, Attrs attrs) {
  kiln::call_op(id, inputs, std::move(attrs));
}

Tensor strings(const std::vector<std::string>& v) {
  return Tensor::from_vector<std::string>(v, Shape{static_cast<int64_t>(v.size())});
}
Tensor scalar_string(const std::string& s) {
  return Tensor::from_vector<std::string>({s}, Shape{});
}

// The keys the seeds use (make_decoder_seeds.py), one per value kind.
const char* const kKeys[] = {"i", "f", "s"};
const DType kExampleTypes[] = {DType::kInt64, DType::kFloat32, DType::kString};

// `n` default values (2: the dense shape's, 1: a variable-length feature's padding).
Tensor dense_default(DType t, int64_t n) {
  if (t == DType::kString)
    return Tensor::from_vector<std::string>(std::vector<std::string>(n, "d"), Shape{n});
  if (t == DType::kInt64) return Tensor::from_vector<int64_t>(std::vector<int64_t>(n, 7), Shape{n});
  return Tensor::from_vector<float>(std::vector<float>(n, 0.5f), Shape{n});
}

void example(const std::string& in, unsigned opt) {
  // A batch of two: the bytes, then the bytes again (or an empty Example).
  const Tensor ser = strings({in, opt & 1 ? std::string() : in});
  const Tensor names = Tensor::empty(DType::kString, Shape{0});
  for (const char* key : kKeys) {
    for (DType t : kExampleTypes) {
      guarded([&] { op(OpId::ParseExampleVarLen, {ser, names}, Attrs{std::string(key), t}); });
      guarded([&] {
        const bool varlen = opt & 2;
        const int64_t defaults = opt & 4 ? 0 : varlen ? 1 : 2;
        op(OpId::ParseExampleDense, {ser, names, dense_default(t, defaults)},
           Attrs{std::string(key), t, varlen ? std::vector<int64_t>{} : std::vector<int64_t>{2},
                 varlen});
      });
    }
  }
}

void sequence_example(const std::string& in, unsigned opt) {
  const Tensor ser = opt & 1 ? strings({in}) : strings({in, in});
  const Tensor names = Tensor::empty(DType::kString, Shape{0});
  for (const char* key : kKeys) {
    for (DType t : kExampleTypes) {
      guarded([&] {
        op(OpId::ParseSequenceFeatureList, {ser, names},
           Attrs{std::string(key), t, false, std::vector<int64_t>{}, bool(opt & 2)});
      });
      guarded([&] {
        op(OpId::ParseSequenceFeatureList, {ser, names},
           Attrs{std::string(key), t, true, std::vector<int64_t>{opt & 4 ? 1 : 2}, bool(opt & 2)});
      });
      // The context is an Example.
      guarded([&] {
        op(OpId::ParseExampleVarLen, {ser, names}, Attrs{std::string("c") + key, t});
      });
    }
  }
}

void decode_png(const std::string& in, unsigned opt) {
  static const int64_t channels[] = {0, 1, 3, 4};
  guarded([&] {
    op(OpId::DecodePng, {scalar_string(in)},
       Attrs{channels[opt & 3], DType::kUInt8});  // uint8 only
  });
}

void decode_jpeg(const std::string& in, unsigned opt) {
  static const int64_t channels[] = {0, 1, 3, 0};
  static const int64_t ratios[] = {1, 2, 4, 8};
  const bool recover = opt & 8;
  guarded([&] {
    op(OpId::DecodeJpeg, {scalar_string(in)},
       Attrs{channels[opt & 3], ratios[(opt >> 2) & 3], !(opt & 1), recover, recover ? 0.25 : 1.0,
             std::string(opt & 2 ? "INTEGER_FAST" : "")});
  });
}

void decode_image(const std::string& in, unsigned opt) {
  static const int64_t channels[] = {0, 1, 3, 4};
  guarded([&] {
    op(OpId::DecodeImage, {scalar_string(in)},
       Attrs{channels[opt & 3], DType::kUInt8, !(opt & 8)});  // kiln: uint8 only
  });
}

const DType kRawTypes[] = {DType::kBool,     DType::kInt8,      DType::kUInt8,     DType::kInt32,
                           DType::kInt64,    DType::kFloat32,   DType::kFloat64,   DType::kFloat16,
                           DType::kBFloat16, DType::kComplex64, DType::kComplex128};

void decode_raw(const std::string& in, unsigned opt) {
  const bool little = !(opt & 1);
  // Two records of the same length (the input split in half), and the whole.
  const size_t half = in.size() / 2;
  const Tensor halves = strings({in.substr(0, half), in.substr(half, half)});
  const Tensor whole = scalar_string(in);
  for (DType t : kRawTypes) {
    guarded([&] { op(OpId::DecodeRaw, {halves}, Attrs{t, little}); });
    guarded([&] { op(OpId::DecodeRaw, {whole}, Attrs{t, little}); });
  }
  // DecodePaddedRaw: a fixed length from the selector, records of any length.
  static const int32_t lengths[] = {0, 1, 2, 4, 8, 16, 24, 64};
  const Tensor ragged = strings({in, in.substr(0, half), std::string()});
  for (DType t : kRawTypes) {
    guarded([&] {
      op(OpId::DecodePaddedRaw, {ragged, Tensor(lengths[(opt >> 1) & 7])}, Attrs{t, little});
    });
    guarded([&] {
      op(OpId::DecodePaddedRaw, {ragged, Tensor(static_cast<int32_t>(in.size()))},
         Attrs{t, little});
    });
  }
}

void parse_tensor(const std::string& in, unsigned) {
  const Tensor ser = scalar_string(in);
  for (DType t : kRawTypes) guarded([&] { op(OpId::ParseTensor, {ser}, Attrs{t}); });
  guarded([&] { op(OpId::ParseTensor, {ser}, Attrs{DType::kString}); });
}

void unicode_decode(const std::string& in, unsigned opt) {
  static const char* const encodings[] = {"UTF-8", "UTF-16-BE", "UTF-32-BE", "UTF-8"};
  static const char* const errors[] = {"replace", "ignore", "strict", "replace"};
  const std::string enc = encodings[opt & 3];
  const std::string err = errors[(opt >> 2) & 3];
  const int64_t replacement = opt & 8 ? 0x20 : 0xFFFD;
  const bool control = opt & 4;
  const Tensor one = scalar_string(in);
  const size_t half = in.size() / 2;
  const Tensor two = strings({in.substr(0, half), in.substr(half)});
  for (const Tensor* x : {&one, &two}) {
    guarded([&] {
      op(OpId::UnicodeDecode, {*x}, Attrs{enc, err, replacement, control, DType::kInt64});
    });
    guarded([&] {
      op(OpId::UnicodeDecodeWithOffsets, {*x},
         Attrs{enc, err, replacement, control, DType::kInt32});
    });
  }
  // UnicodeTranscode decodes the same way, then encodes.
  guarded([&] {
    op(OpId::UnicodeTranscode, {two},
       Attrs{enc, std::string(opt & 1 ? "UTF-8" : "UTF-16-BE"), err, replacement, control});
  });
}

const std::string& record_path() {
  static const std::string p = (std::filesystem::temp_directory_path() /
                                ("kiln_decoders_fuzz_" + std::to_string(::getpid()) + ".tfrecord"))
                                   .string();
  return p;
}

void tfrecord(const std::string& in, unsigned opt) {
  {
    std::ofstream f(record_path(), std::ios::binary | std::ios::trunc);
    f.write(in.data(), static_cast<std::streamsize>(in.size()));
  }
  // A small read size crosses buffer (and inflate) boundaries mid-record.
  const size_t buffer = opt & 1 ? 7 : 256 * 1024;
  for (kiln::io::Compression c :
       {kiln::io::Compression::kNone, kiln::io::Compression::kZlib, kiln::io::Compression::kGzip}) {
    guarded([&] {
      kiln::io::RecordReader r(record_path(), c, buffer);
      std::string rec;
      for (int n = 0; n < 100000 && r.read(&rec); ++n) {
      }
    });
  }
}

void init() {
  static const bool done = [] {
    kiln::config().max_allocation_bytes = int64_t{1} << 30;
    kiln::config().num_threads = 1;
    (void)record_path();  // built before the handler is registered, so destroyed after it
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove(record_path(), ec);
    });
    return true;
  }();
  (void)done;
}

}  // namespace

/// Decodes one fuzz input (its first byte selects the decoder).
inline void decode_one(const uint8_t* data, size_t size) {
  if (size < 1) return;
  init();
  const unsigned sel = data[0] & 0x0F, opt = data[0] >> 4;
  const std::string in(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (sel) {
    case 0: example(in, opt); break;
    case 1: sequence_example(in, opt); break;
    case 2: decode_png(in, opt); break;
    case 3: decode_jpeg(in, opt); break;
    case 4: decode_image(in, opt); break;
    case 5: decode_raw(in, opt); break;
    case 6: parse_tensor(in, opt); break;
    case 7: unicode_decode(in, opt); break;
    case 8: tfrecord(in, opt); break;
    default: break;
  }
}

}  // namespace kiln::fuzz::decoders
