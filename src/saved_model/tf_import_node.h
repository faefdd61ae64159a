// Internal: one TensorFlow function body being imported (tf_import.h): its
// args and nodes by name, imported in dependency order, and what a node's
// import rule sees (tf_import::Context over a NodeDef).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "saved_model/tf_import.h"

namespace kiln::saved_model::detail {

class FunctionBody {
 public:
  FunctionBody(const TfImporter& importer, const pb::FunctionDef& f, std::string where, int depth);
  void bind_arg(const std::string& name, TfValue v);
  /// Imports every node, each after the nodes it reads or waits for.
  void run();
  /// The value a FunctionDef names: "arg", or "node:output_arg:index".
  TfValue value(const std::string& ref) const;

 private:
  struct Done {
    std::vector<TfValue> outs;
    /// Output args (name, count), TensorFlow's order; one arg of every
    /// output when the op has a single (maybe list) output arg.
    std::vector<std::pair<std::string, size_t>> args;
  };
  std::vector<const pb::NodeDef*> order() const;
  void import_node(const pb::NodeDef& n);
  /// The outputs of a structural op; nullopt for another op.
  std::optional<std::vector<TfValue>> structural(const pb::NodeDef& n,
                                                 const std::vector<TfValue>& in);
  std::vector<TfValue> call_if(const pb::NodeDef& n, const std::vector<TfValue>& in);
  std::vector<TfValue> call_while(const pb::NodeDef& n, const std::vector<TfValue>& in);
  std::string func_attr(const pb::NodeDef& n, const char* name) const;
  [[noreturn]] void fail(const pb::NodeDef& n, const std::string& msg) const;

  const TfImporter& imp_;
  const pb::FunctionDef& f_;
  std::string where_;
  int depth_;
  std::map<std::string, TfValue> args_;
  std::map<std::string, Done> nodes_;
};

/// Imports one node through its op row or composite rule; its outputs and
/// output-arg layout (tf_import_node.cpp).
std::vector<TfValue> import_op(const pb::NodeDef& n, const std::vector<TfValue>& in,
                               const std::string& where,
                               std::vector<std::pair<std::string, size_t>>* args);

}  // namespace kiln::saved_model::detail
