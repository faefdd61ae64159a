// Internal: the kiln-serve fuzz target's body (tests/fuzz/serve_fuzz.cpp), shared
// with the CTest replay of its corpus (tests/cpp/serve/serve_fuzz_corpus_test.cpp).
//
// An input is one selector byte, then the bytes. Selector bit 0 clear: the bytes are
// a predict request body, parsed and converted for a signature with a float32
// [?, 2], a string [?] and an int64 [?, 3] input (bit 1 picks which inputs the
// signature has); what converts is written back as a response in both formats.
// Bit 0 set: the bytes are a URL path routed for GET and POST. A request may fail
// with a kiln error; anything else (a crash, a sanitizer report, a hang) is a bug.
#pragma once
#include <cstdint>
#include <exception>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "convert.h"
#include "kiln/status.h"
#include "rest.h"

namespace kiln::fuzz::serve {

inline void predict_one(std::string_view body, bool all_inputs) {
  using kiln::serve::TensorInfo;
  std::vector<TensorInfo> inputs = {{"x", DType::kFloat32, Shape({-1, 2})}};
  if (all_inputs) {
    inputs.push_back({"s", DType::kString, Shape({-1})});
    inputs.push_back({"i", DType::kInt64, Shape({-1, 3})});
  }
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
  else
    predict_one(bytes, (data[0] & 2) != 0);
}

}  // namespace kiln::fuzz::serve
