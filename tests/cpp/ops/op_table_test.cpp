#include <set>

#include "test_util.h"

namespace kiln {
namespace {

TEST(OpTable, EveryRowIsComplete) {
  std::set<std::string> names;
  for (const OpDef& d : op_table()) {
    SCOPED_TRACE(d.type_name);
    EXPECT_EQ(&op_def(d.id), &d);
    EXPECT_TRUE(names.insert(d.type_name).second) << "duplicate type name";
    EXPECT_NE(d.infer, nullptr) << "no inference function";
    EXPECT_NE(d.cpu_kernel, nullptr) << "no CPU kernel";
    if (d.has(kRandom)) {
      EXPECT_TRUE(d.has(kStateful)) << "random ops must be stateful";
    }
    if (d.has(kCommutative)) {
      EXPECT_EQ(d.inputs.size(), 2u);
    }
    if (d.has(kVariadicInput)) {
      EXPECT_FALSE(d.inputs.empty());
    }
    size_t bodies = 0;
    for (const AttrDef& a : d.attrs) {
      EXPECT_NE(std::string(a.name), "");
      bodies += a.type == AttrType::kSubgraph;
    }
    if (d.has(kSource)) {
      EXPECT_TRUE(d.inputs.empty()) << "a source has no inputs";
    }
    if (d.has(kCall)) {
      EXPECT_EQ(bodies, 1u) << "a call runs exactly one subgraph attr";
      EXPECT_TRUE(d.has(kVariadicInput));
    }
    if (d.body_input_offset > 0) {
      EXPECT_GT(bodies, 0u) << "body_input_offset on an op without bodies";
    }
    if (d.has(kVariadicOutput)) {
      EXPECT_EQ(d.outputs.size(), 1u) << "one declared output, repeated";
    }
    if (d.block_f32) {
      EXPECT_TRUE(d.has(kElementwise)) << "block kernels are for elementwise ops";
    }
  }
  EXPECT_EQ(names.size(), kNumOps);
}

// The traits that replace op lists elsewhere hold for the ops they name.
TEST(OpTable, TraitsNameTheRightOps) {
  EXPECT_TRUE(op_def(OpId::Placeholder).has(kSource));
  EXPECT_TRUE(op_def(OpId::Const).has(kSource));
  EXPECT_TRUE(op_def(OpId::PartitionedCall).has(kCall));
  EXPECT_TRUE(op_def(OpId::StatefulPartitionedCall).has(kCall));
  EXPECT_FALSE(op_def(OpId::While).has(kCall));
  EXPECT_EQ(op_def(OpId::If).body_input_offset, 1);
  EXPECT_EQ(op_def(OpId::While).body_input_offset, 0);
  for (OpId id : {OpId::If, OpId::While, OpId::Placeholder, OpId::FusedElementwise})
    EXPECT_TRUE(op_def(id).has(kGraphOnly)) << op_def(id).type_name;
  EXPECT_TRUE(op_def(OpId::Unstack).has(kVariadicOutput));
  EXPECT_TRUE(op_def(OpId::Split).has(kVariadicOutput));
  for (OpId id : {OpId::MatMul, OpId::Conv2D, OpId::FusedElementwise})
    EXPECT_NE(op_def(id).cost, nullptr) << op_def(id).type_name;
  EXPECT_EQ(op_def(OpId::BiasAdd).epilogue, Epilogue::kBiasAdd);
  EXPECT_EQ(op_def(OpId::Relu).epilogue, Epilogue::kRelu);
  EXPECT_EQ(op_def(OpId::ClipByValue).epilogue, Epilogue::kClip);
  EXPECT_EQ(op_def(OpId::Minimum).epilogue, Epilogue::kNone);
}

// A kernel error names the op that ran, from its row.
TEST(OpTable, KernelErrorsNameTheRunningOp) {
  testing::expect_error(
      [] {
        gather(Tensor({1.f, 2.f}), Tensor({5}));
      },
      Code::kInvalidArgument, {"GatherV2: indices[0] = 5"});
}

TEST(OpTable, LookupByTypeName) {
  ASSERT_NE(find_op("AddV2"), nullptr);
  EXPECT_EQ(find_op("AddV2")->id, OpId::Add);
  EXPECT_STREQ(op_def(OpId::Add).node_name, "add");
  EXPECT_EQ(find_op("NoSuchOp"), nullptr);
}

TEST(OpTable, StatefulOpsAreMarked) {
  for (OpId id :
       {OpId::Print, OpId::AssignVariable, OpId::AssignAddVariable, OpId::AssignSubVariable,
        OpId::ReadVariable, OpId::RandomUniform, OpId::RandomNormal})
    EXPECT_TRUE(op_def(id).has(kStateful)) << op_def(id).type_name;
  EXPECT_FALSE(op_def(OpId::Add).has(kStateful));
}

TEST(OpTable, CompleteAttrsFillsDefaultsAndChecksTypes) {
  for (const OpDef& d : op_table()) {
    bool all_defaulted = true;
    for (const AttrDef& a : d.attrs)
      if (std::holds_alternative<std::monostate>(a.default_value)) all_defaulted = false;
    if (!all_defaulted || d.attrs.empty()) continue;
    Attrs attrs;
    complete_attrs(d, attrs);
    EXPECT_EQ(attrs.size(), d.attrs.size()) << d.type_name;
    Attrs wrong(d.attrs.size(), AttrValue(std::string("not-a-valid-value")));
    bool any_non_string = false;
    for (const AttrDef& a : d.attrs) any_non_string |= a.type != AttrType::kString;
    if (any_non_string)
      testing::expect_error([&] { complete_attrs(d, wrong); }, Code::kInvalidArgument,
                            {d.type_name, "must be of type"});
  }
  Attrs too_many(64);
  testing::expect_error([&] { complete_attrs(op_def(OpId::Add), too_many); },
                        Code::kInvalidArgument, {"AddV2", "attributes"});
}

}  // namespace
}  // namespace kiln
