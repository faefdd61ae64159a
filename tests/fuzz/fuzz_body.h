// One fuzz input against the saved-model loader or the ONNX loader: shared
// by the libFuzzer targets (saved_model_fuzz.cpp, onnx_fuzz.cpp) and the
// CTest replays of their corpora (tests/cpp/saved_model/fuzz_corpus_test.cpp,
// tests/cpp/onnx/onnx_fuzz_corpus_test.cpp).
//
// An input is one byte choosing the file it replaces, then that file's bytes:
// 0 saved_model.pb, 1 the variables' index, 2 their data (kiln_variables.* in
// earlier kiln exports, variables.index / variables.data-00000-of-00001 in
// TensorFlow's layout).
// The other files are those of `dir`, a copy of a real export. A load may fail
// with a kiln error; anything else (a crash, a sanitizer report, an allocation
// past libFuzzer's -rss_limit_mb, a hang) is a bug. Loaded models are not run:
// a hostile graph may legitimately loop forever when called, as in TensorFlow.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "kiln/checkpoint.h"
#include "kiln/onnx.h"
#include "kiln/saved_model.h"

namespace kiln::fuzz {

inline void load_one(const std::string& dir, const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  // kiln's earlier exports, or TensorFlow's layout (kiln's exports now, and TF's own)
  static const char* kiln_files[] = {"saved_model.pb", "variables/kiln_variables.index",
                                     "variables/kiln_variables.data"};
  static const char* tf_files[] = {"saved_model.pb", "variables/variables.index",
                                   "variables/variables.data-00000-of-00001"};
  if (size < 1) return;
  const bool earlier = fs::exists(dir + "/" + kiln_files[1]);
  const std::string target = dir + "/" + (earlier ? kiln_files : tf_files)[data[0] % 3];
  const std::string saved = target + ".orig";
  if (!fs::exists(saved)) fs::copy_file(target, saved);
  {
    std::ofstream f(target, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  }
  try {
    saved_model::load(dir);
  } catch (const Error&) {
  }
  fs::copy_file(saved, target, fs::copy_options::overwrite_existing);
}

/// One fuzz input against the ONNX loader: the bytes are a model file. The
/// load validates and traces it (models reading inputs by value trace at
/// their first call, which the fuzzer does not make); it is not run.
inline void load_onnx_one(const uint8_t* data, size_t size) {
  try {
    onnx::load_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const Error&) {
  }
}

/// One fuzz input against the checkpoint (tensor bundle) reader: a byte
/// choosing the file it replaces (0 `prefix.index`, 1 the data shard), then
/// its bytes; the other file is the base bundle's. Every value and the object
/// graph are read; each may fail with a kiln error.
inline void load_bundle_one(const std::string& prefix, const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  if (size < 1) return;
  const std::string target =
      data[0] % 2 ? checkpoint::data_path(prefix, 0, 1) : checkpoint::index_path(prefix);
  const std::string saved = target + ".orig";
  if (!fs::exists(saved)) fs::copy_file(target, saved);
  {
    std::ofstream f(target, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  }
  try {
    checkpoint::BundleReader r(prefix);
    for (const std::string& key : r.keys()) {
      try {
        if (key == checkpoint::kObjectGraphKey)
          checkpoint::decode_object_graph(r.strings(key).at(0), key);
        else
          r.read(key);
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
  }
  fs::copy_file(saved, target, fs::copy_options::overwrite_existing);
}

}  // namespace kiln::fuzz
