// Stateful ops: print (tf.print) and the variable ops behind kiln::Variable
// (include/kiln/variable.h).
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

/// One argument of print: literal text (printed as-is) or a tensor
/// (formatted like Tensor::to_string, summarized per PrintSettings). C++
/// numbers become scalar tensors of their natural dtype.
class PrintArg {
 public:
  PrintArg(const Tensor& t) : tensor_(t), is_tensor_(true) {}  // NOLINT: implicit by design
  PrintArg(const char* s) : text_(s) {}                        // NOLINT
  PrintArg(std::string s) : text_(std::move(s)) {}             // NOLINT
  PrintArg(std::string_view s) : text_(s) {}                   // NOLINT
  template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  PrintArg(T v) : tensor_(Scalar(v), Scalar(v).natural_dtype()), is_tensor_(true) {}  // NOLINT

  bool is_tensor() const { return is_tensor_; }
  const Tensor& tensor() const { return tensor_; }
  const std::string& text() const { return text_; }

 private:
  Tensor tensor_;
  std::string text_;
  bool is_tensor_ = false;
};

/// tf.print's keyword arguments.
struct PrintSettings {
  /// "stderr" (default), "stdout", "log(info)" / "log(warning)" /
  /// "log(error)" (stderr), "file://<path>" (appends), or an id returned by
  /// register_print_stream ("ostream:<n>").
  std::string output_stream = "stderr";
  std::string sep = " ";
  std::string end = "\n";
  /// Elements shown at each end of every axis; -1 shows all.
  int64_t summarize = 3;
};

/// Prints `args` separated by `sep` and followed by `end`, then flushes
/// (tf.print). Runs the PrintV2 op, so a traced function prints each time it
/// runs. Example: print({"x =", Tensor({1, 2})}) writes "x = [1 2]\n".
void print(const std::vector<PrintArg>& args, const PrintSettings& settings = {});
/// Same, writing to `os` (registered with register_print_stream; it stays
/// registered until unregister_print_stream).
void print(const std::vector<PrintArg>& args, std::ostream& os, PrintSettings settings = {});

/// Makes `os` usable as a print output stream; returns its output_stream id
/// ("ostream:<n>"). Registering the same stream again returns the same id.
/// Unregister before `os` is destroyed.
std::string register_print_stream(std::ostream& os);
/// Forgets `os`; printing to its id afterwards is a NotFound error.
void unregister_print_stream(std::ostream& os);

// ---- variable ops (used by kiln::Variable; handles are scalar resource tensors) ----

/// The variable's current value (a snapshot: later assignments do not change
/// it). `dtype` and `shape` describe the variable (checked when the handle is
/// known; used as the result spec while tracing).
Tensor read_variable(const Tensor& handle, DType dtype, const Shape& shape);
/// Replaces the variable's value; dtype and shape must match the variable's.
void assign_variable(const Tensor& handle, const Tensor& value);
/// value += delta / value -= delta (numeric variables; same dtype and shape).
void assign_add_variable(const Tensor& handle, const Tensor& delta);
void assign_sub_variable(const Tensor& handle, const Tensor& delta);

}  // namespace kiln
