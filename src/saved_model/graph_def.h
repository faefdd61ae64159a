// Internal: traced graphs <-> FunctionDefs. Every graph of an export (a
// function, a cond branch, a loop body, a called function) is one
// FunctionDef of the library: placeholders then captured resources are its
// input args, nodes keep their names, attrs and control inputs.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/variable.h"
#include "saved_model/proto_io.h"

namespace kiln::saved_model::detail {

/// FunctionDef attr marking a jit_compile function (TensorFlow's name).
inline constexpr const char* kJitAttr = "_XlaMustCompile";
/// Nodes one FunctionDef may hold, and how deep bodies may nest.
inline constexpr int kMaxNodes = 1 << 22;
inline constexpr int kMaxNesting = 64;

/// Writes graphs into a FunctionDefLibrary, each body once.
/// On a While in TensorFlow's form: how many of its inputs are captures its
/// body passes through (kiln's body does not return them; the reader drops them).
inline constexpr const char* kKilnPassedAttr = "_kiln_passed_through";

class LibraryWriter {
 public:
  explicit LibraryWriter(pb::FunctionDefLibrary* lib) : lib_(lib) {}
  /// Adds `g` as a function named after `base` (made unique); its captured
  /// variables (resource constants) become trailing resource args, returned
  /// in `captured` when given (else they are an error: bodies take theirs
  /// as placeholders). Returns the FunctionDef (its name is unique).
  /// `arg_lists[i]`: arg i is a TensorList (TensorFlow's variant; kiln's
  /// lists are resources); `out_lists`, when given, gets the same of its
  /// outputs.
  pb::FunctionDef* add(const std::string& base, const Graph& g, bool jit,
                       std::vector<Variable>* captured, const std::vector<bool>& arg_lists = {},
                       std::vector<bool>* out_lists = nullptr, bool pass_extra_args = false);

 private:
  struct Body {
    std::string name;
    std::vector<bool> out_lists;
  };
  /// `pass_extra_args`: the args beyond its outputs are returned too (a
  /// While body in TensorFlow's form, whose captures are loop variables).
  const Body& body(const Subgraph& s, bool jit, const std::vector<bool>& arg_lists,
                   bool pass_extra_args);
  /// Writes `n`'s attributes; returns which of its outputs are TensorLists.
  std::vector<bool> write_node(const Node& n, pb::NodeDef* out, bool jit,
                               const std::vector<bool>& in_lists);
  pb::FunctionDefLibrary* lib_;
  std::set<std::string> names_;
  std::map<std::pair<const Subgraph*, bool>, Body> bodies_;
};

/// Builds graphs from a validated library, each body once.
class LibraryReader {
 public:
  /// `where` names the file in messages. The library's function names must
  /// be unique (checked).
  /// `format`: the export's kiln format (2: TensorFlow's form, whose Const
  /// inputs standing for kiln's attributes are dropped, OpDef::tf_attr_inputs).
  LibraryReader(const pb::FunctionDefLibrary& lib, std::string where, int64_t format = 1);
  /// The graph of function `name`: its resource args bound to `handles`
  /// (as the constants tracing makes); other args become placeholders.
  /// `jit` is set when the function was saved with jit_compile.
  std::unique_ptr<Graph> graph(const std::string& name, std::span<const Tensor> handles,
                               bool* jit = nullptr);
  /// A function's input args (dtype and shape) and whether it has an attr.
  const pb::FunctionDef& def(const std::string& name) const;

 private:
  /// Function `name` as a body; `drop`: its last outputs, which pass its
  /// last args through (kKilnPassedAttr), left out.
  Ref<Subgraph> body(const std::string& name, int depth, int64_t drop = 0);
  std::unique_ptr<Graph> build(const pb::FunctionDef& f, std::span<const Tensor> handles,
                               int depth);
  void read_attrs(const OpDef& op, const pb::NodeDef& nd, Attrs& attrs, int depth,
                  const std::string& at);
  std::map<std::string, const pb::FunctionDef*> defs_;
  std::map<std::pair<std::string, int64_t>, Ref<Subgraph>> bodies_;
  std::set<std::string> building_;
  std::string where_;
  int64_t format_ = 1;
};

/// Whether `n` is a captured resource (a variable's handle as a Const).
bool is_resource_const(const Node& n);

/// Splits a tensor name, "node" or "node:3" (index 0 when absent); false
/// when malformed.
bool parse_tensor_name(const std::string& s, std::string& node, int64_t& index);
/// The same, also taking TensorFlow's "node:output_arg:3" (`arg` set; empty
/// for the other forms).
bool parse_tensor_name(const std::string& s, std::string& node, std::string& arg, int64_t& index);

/// Prefix of kiln's attributes on a node whose TensorFlow op lacks them.
inline constexpr const char* kKilnAttrPrefix = "_kiln_";

/// The shape recorded for input arg `i` (unknown rank when absent).
Shape arg_shape(const pb::FunctionDef& f, int i, const std::string& where);

}  // namespace kiln::saved_model::detail
