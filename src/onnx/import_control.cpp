// ONNX import rules: If and Loop, through kiln's cond and while_loop (their
// bodies read values of the enclosing graphs, which tracing captures).
#include "kiln/control_flow.h"
#include "onnx/import.h"

namespace kiln::onnx::detail {
namespace {

using C = ImportContext;

Tensor scalar_of(C& c, const Tensor& t, const char* what) {
  if (t.shape().rank_known() && t.shape().is_fully_defined() && t.num_elements() != 1)
    c.fail(what, " must hold one element");
  return reshape(t, std::vector<int64_t>{});
}

std::vector<Tensor> branch(C& c, const char* name) {
  Scope inner(&c.scope());
  const pb::GraphProto& g = c.attr_graph(name);
  if (g.input_size() != 0) c.fail(name, " takes inputs");
  std::vector<Tensor> out = import_nodes(g, c.opset(), inner, str_cat(c.where(), " ", name), 1);
  for (Tensor& t : out) t = identity(t);
  return out;
}

void if_rule(C& c) {
  const Tensor pred = scalar_of(c, c.input(0), "the condition");
  std::vector<Tensor> out = cond(
      pred, [&] { return branch(c, "then_branch"); }, [&] { return branch(c, "else_branch"); },
      "onnx_if");
  if (out.size() != c.num_outputs())
    c.fail("the branches return ", out.size(), " values for ", c.num_outputs(), " outputs");
  for (size_t i = 0; i < out.size(); ++i) c.set_output(i, out[i]);
}

// The dtypes of a Loop body's outputs, from a trace of the body as a cond
// branch (bodies may read the enclosing graphs; the If is never used, so the
// optimizer prunes it).
std::vector<DType> probe_output_dtypes(C& c, const pb::GraphProto& body, size_t n_vars) {
  auto branch = [&] {
    Scope inner(&c.scope());
    inner.set(body.input(0).name(), constant(int64_t{0}, DType::kInt64));
    inner.set(body.input(1).name(), constant(true, DType::kBool));
    for (size_t k = 0; k < n_vars; ++k)
      inner.set(body.input(static_cast<int>(2 + k)).name(), c.input(2 + k));
    std::vector<Tensor> outs = import_nodes(body, c.opset(), inner, c.where() + " body", 1);
    for (Tensor& t : outs) t = identity(t);
    return outs;
  };
  std::vector<DType> out;
  for (const Tensor& t : cond(constant(false, DType::kBool), branch, branch, "onnx_loop_probe"))
    out.push_back(t.dtype());
  return out;
}

void loop(C& c) {
  const pb::GraphProto& body = c.attr_graph("body");
  const size_t n_vars = c.num_inputs() > 2 ? c.num_inputs() - 2 : 0;
  if (body.input_size() != static_cast<int>(n_vars) + 2)
    c.fail("the body takes ", body.input_size(), " inputs for ", n_vars, " loop variables");
  if (body.output_size() < static_cast<int>(n_vars) + 1)
    c.fail("the body returns ", body.output_size(), " values for ", n_vars, " loop variables");
  const size_t n_scan = static_cast<size_t>(body.output_size()) - 1 - n_vars;
  if (c.num_outputs() > n_vars + n_scan) c.fail("more outputs than loop values");
  // Scan outputs accumulate in TensorArrays of the body outputs' declared types.
  std::vector<TensorArray> scans;
  std::vector<DType> probed;
  for (size_t k = 0; k < n_scan; ++k) {
    const auto& info = body.output(static_cast<int>(1 + n_vars + k));
    DType dt = DType::kInvalid;
    if (info.has_type() && info.type().has_tensor_type() &&
        info.type().tensor_type().has_elem_type()) {
      dt = from_proto(info, c.where() + " body").dtype;
    } else {  // undeclared: trace the body once, apart, to learn it
      if (probed.empty()) probed = probe_output_dtypes(c, body, n_vars);
      dt = probed[1 + n_vars + k];
    }
    scans.emplace_back(dt, int64_t{0}, true);
  }
  const Tensor max_trip =
      c.has_input(0) ? cast(scalar_of(c, c.input(0), "M"), DType::kInt64) : Tensor();
  std::vector<Tensor> vars = {
      constant(int64_t{0}, DType::kInt64),
      c.has_input(1) ? scalar_of(c, c.input(1), "cond") : constant(true, DType::kBool)};
  WhileOptions opts;
  opts.name = "onnx_loop";
  opts.shape_invariants = {Shape{}, Shape{}};
  for (size_t k = 0; k < n_vars; ++k) {
    const Tensor& v = c.input(2 + k);
    vars.push_back(v);
    Shape inv = Shape::unknown_rank();
    if (v.shape().rank_known()) inv = Shape(std::vector<int64_t>(v.rank(), -1));
    opts.shape_invariants.push_back(inv);
  }
  for (const TensorArray& ta : scans) {
    vars.push_back(ta.handle());
    opts.shape_invariants.push_back(std::nullopt);
  }
  auto cond_fn = [&](const std::vector<Tensor>& v) {
    return max_trip.defined() ? logical_and(v[1], less(v[0], max_trip)) : identity(v[1]);
  };
  auto body_fn = [&](const std::vector<Tensor>& v) {
    Scope inner(&c.scope());
    inner.set(body.input(0).name(), v[0]);
    inner.set(body.input(1).name(), v[1]);
    for (size_t k = 0; k < n_vars; ++k)
      inner.set(body.input(static_cast<int>(2 + k)).name(), v[2 + k]);
    std::vector<Tensor> out = import_nodes(body, c.opset(), inner, c.where() + " body", 1);
    std::vector<Tensor> next = {v[0] + constant(int64_t{1}, DType::kInt64),
                                cast(scalar_of(c, out[0], "the body's condition"), DType::kBool)};
    for (size_t k = 0; k < n_vars; ++k) next.push_back(identity(out[1 + k]));
    for (size_t k = 0; k < n_scan; ++k)
      next.push_back(
          scans[k].with_handle(v[2 + n_vars + k]).write(v[0], out[1 + n_vars + k]).handle());
    return next;
  };
  std::vector<Tensor> out = while_loop(cond_fn, body_fn, vars, opts);
  for (size_t k = 0; k < n_vars; ++k) c.set_output(k, out[2 + k]);
  for (size_t k = 0; k < n_scan; ++k)
    if (c.wants_output(n_vars + k))
      c.set_output(n_vars + k, scans[k].with_handle(out[2 + n_vars + k]).stack());
}

constexpr ImportRule kRules[] = {
    {"If", if_rule},
    {"Loop", loop},
};

}  // namespace

std::span<const ImportRule> control_import_rules() {
  return kRules;
}

}  // namespace kiln::onnx::detail
