#include <mutex>
#include <string>
#include <vector>

#include "families.h"
#include "kiln/op.h"

namespace kiln {
namespace {

struct NameRow {
  const char* type_name;
  const char* node_name;
};
constexpr NameRow kNames[] = {
#define KILN_OP(id, type_name, node_name) {type_name, node_name},
#include "kiln/op_list.def"
#undef KILN_OP
};
static_assert(std::size(kNames) == kNumOps, "op_list.def and OpId disagree");

std::vector<OpDef> build_table() {
  std::vector<OpDef> rows(kNumOps);
  for (size_t i = 0; i < kNumOps; ++i) {
    rows[i].id = static_cast<OpId>(i);
    rows[i].type_name = kNames[i].type_name;
    rows[i].node_name = kNames[i].node_name;
  }
  OpTableBuilder b(rows);
  detail::assemble_op_table(b);
  return rows;  // completeness of every row is checked by tests/cpp/ops/op_table_test.cpp
}

const std::vector<OpDef>& table() {
  static const std::vector<OpDef> rows = build_table();
  return rows;
}

}  // namespace

void define_all_ops(OpTableBuilder& b) {
  define_creation_ops(b);
  define_unary_ops(b);
  define_binary_ops(b);
  define_select_cast_ops(b);
  define_shape_ops(b);
  define_reduce_ops(b);
  define_selection_ops(b);
  define_string_ops(b);
  define_complex_ops(b);
  define_nn_ops(b);
  define_state_ops(b);
  define_graph_ops(b);
  define_control_flow_ops(b);
  define_fused_ops(b);
  define_attention_ops(b);
  define_rnn_ops(b);
  define_collective_ops(b);
  define_linalg_ops(b);
  define_image_ops(b);
  define_tensor_codec_ops(b);
  define_parse_example_ops(b);
  define_summary_ops(b);
  define_unicode_ops(b);
}

const OpDef& op_def(OpId id) {
  return table()[static_cast<size_t>(id)];
}

std::span<const OpDef> op_table() {
  return table();
}

const OpDef* find_op(std::string_view type_name) {
  for (const OpDef& d : table())
    if (type_name == d.type_name) return &d;
  return nullptr;
}

// Out of line: inlined, GCC 12 warns falsely about std::variant storage.
OpDefBuilder& OpDefBuilder::attr(const char* name, AttrType type) {
  d_.attrs.push_back({name, type, AttrValue()});
  return *this;
}
OpDefBuilder& OpDefBuilder::attr(const char* name, AttrType type, AttrValue def) {
  d_.attrs.push_back({name, type, std::move(def)});
  return *this;
}

void OpDef::missing_attr(std::string_view name) const {
  throw InternalError(str_cat(type_name, " has no attribute '", name, "'"));
}

int OpDef::attr_index(std::string_view name) const {
  for (size_t i = 0; i < attrs.size(); ++i)
    if (name == attrs[i].name) return static_cast<int>(i);
  return -1;
}

namespace {
bool attr_matches(AttrType t, const AttrValue& v) {
  switch (t) {
    case AttrType::kBool: return std::holds_alternative<bool>(v);
    case AttrType::kInt: return std::holds_alternative<int64_t>(v);
    case AttrType::kFloat: return std::holds_alternative<double>(v);
    case AttrType::kDType: return std::holds_alternative<DType>(v);
    case AttrType::kString: return std::holds_alternative<std::string>(v);
    case AttrType::kInts: return std::holds_alternative<std::vector<int64_t>>(v);
    case AttrType::kTensor: return std::holds_alternative<Tensor>(v);
    case AttrType::kSubgraph: return std::holds_alternative<Ref<Subgraph>>(v);
    case AttrType::kObject: {
      const auto* o = std::get_if<AttrObjectRef>(&v);
      return o && *o;
    }
  }
  return false;
}
const char* attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::kBool: return "bool";
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kDType: return "dtype";
    case AttrType::kString: return "string";
    case AttrType::kInts: return "list(int)";
    case AttrType::kTensor: return "tensor";
    case AttrType::kSubgraph: return "subgraph";
    case AttrType::kObject: return "object";
  }
  return "?";
}
}  // namespace

void complete_attrs(const OpDef& op, Attrs& attrs) {
  if (attrs.size() > op.attrs.size())
    throw InvalidArgumentError(
        str_cat(op.type_name, ": ", attrs.size(), " attributes given, op has ", op.attrs.size()));
  for (size_t i = 0; i < op.attrs.size(); ++i) {
    const AttrDef& def = op.attrs[i];
    if (i >= attrs.size()) attrs.push_back(def.default_value);
    AttrValue& v = attrs[i];
    if (std::holds_alternative<std::monostate>(v)) {
      if (std::holds_alternative<std::monostate>(def.default_value))
        throw InvalidArgumentError(
            str_cat(op.type_name, ": missing required attribute '", def.name, "'"));
      v = def.default_value;
    }
    // Ints given for float attrs are accepted.
    if (def.type == AttrType::kFloat && std::holds_alternative<int64_t>(v))
      v = static_cast<double>(std::get<int64_t>(v));
    if (!attr_matches(def.type, v))
      throw InvalidArgumentError(str_cat(op.type_name, ": attribute '", def.name,
                                         "' must be of type ", attr_type_name(def.type)));
  }
}

}  // namespace kiln
