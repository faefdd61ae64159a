// Internal: the kiln-serve fuzz target's body (tests/fuzz/serve_fuzz.cpp), shared
// with the CTest replay of its corpus (tests/cpp/serve/serve_fuzz_corpus_test.cpp).
//
// An input is one selector byte, then the bytes. Selector bit 0 clear: the bytes are
// a predict request for a signature with a float32 [?, 2], a string [?] and an
// int64 [?, 3] input (bit 1 picks which inputs the signature has): a JSON body
// (bit 2 clear), converted and written back as a response in both formats, or a
// gRPC PredictRequest message (bit 2 set), decoded and encoded back as the
// response's TensorProtos. Bit 0 set: the bytes are a URL path routed for GET and
// POST. A request may fail with a kiln error; anything else (a crash, a sanitizer
// report, a hang) is a bug.
#pragma once
#include <cstdint>
#include <exception>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "convert.h"
#include "grpc_convert.h"
#include "kiln/status.h"
#include "rest.h"

namespace kiln::fuzz::serve {

inline std::vector<kiln::serve::TensorInfo> signature_inputs(bool all_inputs) {
  std::vector<kiln::serve::TensorInfo> inputs = {{"x", DType::kFloat32, Shape({-1, 2})}};
  if (all_inputs) {
    inputs.push_back({"s", DType::kString, Shape({-1})});
    inputs.push_back({"i", DType::kInt64, Shape({-1, 3})});
  }
  return inputs;
}

inline void grpc_predict_one(std::string_view bytes, bool all_inputs) {
  namespace tfs = kiln::serve::tfs;
  tfs::PredictRequest req;
  if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  const std::vector<kiln::serve::TensorInfo> inputs = signature_inputs(all_inputs);
  std::vector<std::string> keys;
  for (const auto& t : inputs) keys.push_back(t.name);
  try {
    const std::vector<std::string> names = kiln::serve::output_names(req, keys);
    const kiln::serve::Tensors t = kiln::serve::decode_inputs(req, inputs, int64_t{1} << 26);
    tfs::PredictResponse resp;
    kiln::serve::encode_outputs(t, names, &resp);
    (void)resp.SerializeAsString();
  } catch (const kiln::Error&) {
  }
}

inline void predict_one(std::string_view body, bool all_inputs) {
  const std::vector<kiln::serve::TensorInfo> inputs = signature_inputs(all_inputs);
  try {
    kiln::serve::PredictRequest req;
    req.parse(body);
    const std::map<std::string, Tensor> t = req.tensors(inputs);
    std::vector<std::string> order;
    for (const auto& [name, value] : t) order.push_back(name);
    (void)kiln::serve::predict_response(t, order, true);
    (void)kiln::serve::predict_response(t, order, false);
  } catch (const kiln::Error&) {
    // A clear error: what a bad request gets.
  }
}

inline void route_one(std::string_view path) {
  for (std::string_view method : {"GET", "POST"}) {
    try {
      (void)kiln::serve::parse_route(method, path);
    } catch (const kiln::Error&) {
    }
  }
}

inline void run_one(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1)
    route_one(bytes);
  else if (data[0] & 4)
    grpc_predict_one(bytes, (data[0] & 2) != 0);
  else
    predict_one(bytes, (data[0] & 2) != 0);
}

}  // namespace kiln::fuzz::serve
