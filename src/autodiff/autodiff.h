// Internal: autodiff's entry points for the rest of autodiff and for the
// table assembly (src/registry/). The function layer reaches autodiff only
// through the AutodiffHooks installed by install_autodiff().
#pragma once
#include <memory>
#include <span>
#include <vector>

#include "function/subgraph.h"

namespace kiln::detail {

/// Builds the gradient of `body` (src/autodiff/backward.cpp). With `force`,
/// the result has exactly those inputs' gradients (zeros where unconnected;
/// `force_specs[k]` gives the dtype and shape of a forced resource input's
/// gradient); otherwise only connected, differentiable inputs. `grad_specs`
/// overrides the specs of the output-gradient inputs (default: the body's
/// output specs).
Backward build_backward(const TracedSubgraph& body, const std::vector<size_t>* force = nullptr,
                        const std::vector<TensorSpec>* force_specs = nullptr,
                        const std::vector<TensorSpec>* grad_specs = nullptr);

/// Builds the Residuals of `body` (src/autodiff/residuals.cpp); throws what
/// build_backward throws (an op without a gradient rule, ...).
std::unique_ptr<Residuals> build_residuals(const TracedSubgraph& body);

/// True when a tape of the current context records now
/// (src/autodiff/tape.cpp): a gradient computed now is itself differentiated.
bool any_tape_recording();
/// True when a recording tape of the current context would record an op
/// with these inputs (one is watched or produced by a watched value, or is a
/// trainable variable the tape watches on access).
bool tapes_would_record(std::span<const Tensor> inputs);

/// The gradient rule of While (src/autodiff/while_grad.cpp).
void while_grad(const OpDef&, std::span<const Tensor> in, std::span<const Tensor> out,
                std::span<const Tensor> grads, const Attrs& attrs, std::vector<Tensor>& gi);

/// Attaches the gradient rules of the ops that run bodies (calls, If,
/// While), which build and run subgraphs.
void define_subgraph_grads(OpTableBuilder& t);
/// Installs the AutodiffHooks the function layer calls.
void install_autodiff();

}  // namespace kiln::detail
