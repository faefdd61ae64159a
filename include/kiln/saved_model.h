// Export and load traced functions with their variables (TensorFlow's
// SavedModel): a directory kiln writes from Python or C++ and serves from a
// C++ program with no Python (docs/SAVED_MODEL.md describes the format).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/function.h"
#include "kiln/variable.h"

namespace kiln::saved_model {

/// The export format version this kiln writes (and the newest it reads).
/// 2: FunctionDefs in TensorFlow's form (inputs "node:output_arg:index",
/// TensorFlow's type attributes, kiln's other attributes "_kiln_"-prefixed),
/// function specs; TensorFlow loads these. 1: kiln's first form (still read).
inline constexpr int64_t kFormatVersion = 2;
/// TensorFlow's method name for predict signatures.
inline constexpr const char* kPredictMethod = "tensorflow/serving/predict";

/// What to save: an object graph whose node 0 is the root (TensorFlow's
/// SavedObjectGraph) holding user objects, functions (each with the concrete
/// functions traced for it), variables, and serving signatures.
class Exporter {
 public:
  Exporter();
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  static constexpr int kRoot = 0;
  /// A plain object (a Module, a Keras layer); returns its node id.
  int add_object(const std::string& identifier = "_generic_user_object");
  /// A variable's node; the same variable always gets the same node.
  int add_variable(const Variable& v);
  /// A function with its concrete functions (a kiln.function).
  int add_function(std::vector<std::shared_ptr<const ConcreteFunction>> concrete);
  /// Names `child` as attribute `name` of `parent`.
  void add_child(int parent, const std::string& name, int child);
  /// A serving signature: `fn` takes tensors only (its flat inputs are named
  /// `input_keys`, in order) and its flat outputs are named `output_keys`.
  void add_signature(const std::string& key, std::shared_ptr<const ConcreteFunction> fn,
                     std::vector<std::string> input_keys, std::vector<std::string> output_keys);
  /// Writes the directory (created if missing; an existing export there is
  /// replaced file by file). Variables a function captured that no object
  /// holds are saved too. InvalidArgumentError when a graph holds what
  /// cannot be saved (a Python callback, a resource that is not a variable).
  void save(const std::string& dir) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// A loaded serving signature: named tensors in, named tensors out.
/// Thread-safe: concurrent calls are allowed.
class Signature {
 public:
  const std::string& key() const { return key_; }
  const std::vector<std::string>& input_keys() const { return inputs_; }
  const std::vector<std::string>& output_keys() const { return outputs_; }
  const std::vector<ArgSpec>& input_specs() const { return specs_; }
  const std::shared_ptr<const ConcreteFunction>& function() const { return fn_; }
  /// Runs with every input key given (InvalidArgumentError naming a missing,
  /// unknown or mismatched one).
  std::map<std::string, Tensor> operator()(const std::map<std::string, Tensor>& inputs) const;
  /// "serving_default(x: float32[?,64]) -> (output_0: float32[?,10])"
  std::string to_string() const;

 private:
  friend struct Loader;
  std::string key_;
  std::vector<std::string> inputs_, outputs_;
  std::vector<ArgSpec> specs_;
  std::shared_ptr<const ConcreteFunction> fn_;
};

/// One object of a loaded export (node id = index in SavedModel::objects).
struct LoadedObject {
  enum class Kind { kUser, kFunction, kVariable, kSignature, kAsset };
  Kind kind = Kind::kUser;
  std::string identifier;                                          ///< user objects
  std::vector<std::pair<std::string, int>> children;               ///< (name, node id)
  std::vector<std::shared_ptr<const ConcreteFunction>> functions;  ///< kFunction
  Variable variable;                                               ///< kVariable
  std::string signature;                                           ///< kSignature: its key
  /// kAsset: the path of its file in the export's assets/ folder (the string
  /// the functions bound to it receive, as TensorFlow's Asset.asset_path).
  std::string asset_path;
};

/// A loaded export: signatures, objects with their functions and variables.
class SavedModel {
 public:
  const std::map<std::string, Signature>& signatures() const { return signatures_; }
  /// The signature `key`; NotFoundError listing the ones there are.
  const Signature& signature(const std::string& key) const;
  const std::vector<LoadedObject>& objects() const { return objects_; }
  /// Every variable, in node order.
  std::vector<Variable> variables() const;
  const std::string& directory() const { return dir_; }

 private:
  friend struct Loader;
  std::string dir_;
  std::map<std::string, Signature> signatures_;
  std::vector<LoadedObject> objects_;
};

/// Loads an export written by kiln. Never runs code from the files: every
/// size, offset, dtype, shape, op and attribute is checked first, and a
/// damaged or hostile export is a DataLossError (truncated, checksum) or
/// InvalidArgumentError naming the file and what is wrong. NotFoundError
/// when `dir` holds no saved_model.pb.
std::shared_ptr<const SavedModel> load(const std::string& dir);

/// Every TensorFlow op kiln imports from SavedModels TensorFlow wrote, and
/// how: "structural" (calls, control flow, variables, constants), "row" (the
/// op table's row of that name, input for input), "row rule" (that row's
/// TensorFlow rule) or "composite" (built from several kiln ops).
std::vector<std::pair<std::string, std::string>> tf_import_coverage();

}  // namespace kiln::saved_model
