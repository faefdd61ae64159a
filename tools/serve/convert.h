// TensorFlow Serving's predict JSON <-> kiln tensors: the request's
// "instances" (rows) or "inputs" (columns), the response's "predictions" or
// "outputs". Bad requests throw kiln::InvalidArgumentError naming the cause.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/shape.h"
#include "kiln/tensor.h"

namespace kiln::serve {

/// A signature's input or output as metadata and conversion see it.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;
};

/// JSON nesting deeper than this is rejected while parsing (no recursion
/// on the request's depth anywhere).
inline constexpr size_t kMaxJsonDepth = 64;

/// One parsed predict body. The tensors are built for a signature's inputs,
/// known once "signature_name" has been read.
class PredictRequest {
 public:
  PredictRequest();
  ~PredictRequest();
  /// Parses `body` (InvalidArgumentError: malformed, too deep, no
  /// "instances"/"inputs", both, unknown keys).
  void parse(std::string_view body);
  /// "signature_name", else "serving_default".
  const std::string& signature_name() const { return signature_; }
  /// True for "instances" (the answer is "predictions").
  bool row_format() const { return rows_; }
  /// The input tensors for `inputs` (InvalidArgumentError: missing or unknown
  /// names, ragged rows, values that do not fit the dtype, bad base64).
  std::map<std::string, Tensor> tensors(const std::vector<TensorInfo>& inputs) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string signature_ = "serving_default";
  bool rows_ = true;
};

/// The response body: {"predictions": [...]} for rows (one value per row, a
/// dict per row when there are several outputs) or {"outputs": ...}.
/// `order` names the outputs as the signature lists them.
std::string predict_response(const std::map<std::string, Tensor>& outputs,
                             const std::vector<std::string>& order, bool row_format);

/// TensorFlow's enum name of a dtype: "DT_FLOAT", "DT_INT64", ...
std::string tf_dtype_name(DType d);

}  // namespace kiln::serve
