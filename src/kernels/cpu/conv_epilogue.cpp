// The epilogue of a fused convolution call (conv_epilogue.h).
#include "conv_epilogue.h"

#include <algorithm>
#include <cstring>

#include "functors.h"
#include "kiln/config.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {

void epilogue_row(const EpilogueCall& ep, float* y, int64_t ch0, int64_t width, int64_t at) {
  size_t a = 0;
  for (PostOp op : ep.ops) {
    const float* v = nullptr;
    int64_t step = 0;  // 0: one element broadcast, 1: per channel (or a residual's)
    if (fused_conv::takes_arg(op)) {
      const Tensor& t = *ep.args[a++];
      const ArgKind kind = arg_kind(t);
      v = t.data<float>() + (kind == ArgKind::kWhole ? at : kind == ArgKind::kScalar ? 0 : ch0);
      step = kind == ArgKind::kScalar ? 0 : 1;
    }
    // One loop per step (each vectorizes).
    const auto each = [&](auto f) {
      for (int64_t i = 0; i < width; ++i) y[i] = f(y[i], i);
    };
    const float lo = ep.clip_min, hi = ep.clip_max;
    switch (op) {
      case PostOp::kBiasAdd:
      case PostOp::kAdd: each([&](float x, int64_t i) { return x + v[i * step]; }); break;
      case PostOp::kMul: each([&](float x, int64_t i) { return x * v[i * step]; }); break;
      case PostOp::kSub: each([&](float x, int64_t i) { return x - v[i * step]; }); break;
      case PostOp::kRelu: each([](float x, int64_t) { return fn::Relu{}(x); }); break;
      case PostOp::kClip:
        each([&](float x, int64_t) { return std::min(std::max(x, lo), hi); });
        break;
      case PostOp::kSigmoid: each([](float x, int64_t) { return fn::Sigmoid{}(x); }); break;
      case PostOp::kTanh: each([](float x, int64_t) { return fn::Tanh{}(x); }); break;
      case PostOp::kSwish: each([](float x, int64_t) { return x * fn::Sigmoid{}(x); }); break;
      case PostOp::kHardSwish:
        each([](float x, int64_t) { return x * (std::min(std::max(x + 3.f, 0.f), 6.f) / 6.f); });
        break;
      case PostOp::kNone: break;
    }
  }
}

void apply_epilogue(const EpilogueCall& ep, int64_t oc, float* out, int64_t n) {
  const int64_t rows = n / oc;
  const int64_t grain = std::max<int64_t>(1, config().parallel_grain / std::max<int64_t>(1, oc));
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) epilogue_row(ep, out + r * oc, 0, oc, r * oc);
  });
}

bool split_at_residual(const EpilogueCall& ep, EpilogueCall& head, EpilogueCall& tail) {
  if (std::none_of(ep.args.begin(), ep.args.end(),
                   [](const Tensor* t) { return arg_kind(*t) == ArgKind::kWhole; }))
    return false;  // (most calls: nothing copied)
  head = tail = EpilogueCall{{}, {}, ep.clip_min, ep.clip_max};
  size_t a = 0;
  bool found = false;
  for (PostOp op : ep.ops) {
    const Tensor* arg = fused_conv::takes_arg(op) ? ep.args[a++] : nullptr;
    found |= arg && arg_kind(*arg) == ArgKind::kWhole;
    EpilogueCall& part = found ? tail : head;
    part.ops.push_back(op);
    if (arg) part.args.push_back(arg);
  }
  return found;
}

bool fold_affine(const EpilogueCall& ep, int64_t oc, EpilogueCall& folded,
                 std::vector<float>& scale, Tensor& bias) {
  size_t n = 0;
  bool mul = false, add = false;
  for (; n < ep.ops.size() && fused_conv::takes_arg(ep.ops[n]) &&
         arg_kind(*ep.args[n]) != ArgKind::kWhole;
       ++n) {
    mul |= ep.ops[n] == PostOp::kMul;
    add |= ep.ops[n] != PostOp::kMul;
  }
  if (!mul && (n == 0 || (n == 1 && ep.ops[0] == PostOp::kBiasAdd))) return false;
  std::vector<float> s(static_cast<size_t>(oc), 1.f), b(static_cast<size_t>(oc), 0.f);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& t = *ep.args[i];
    const float* v = t.data<float>();
    const int64_t step = t.num_elements() == 1 ? 0 : 1;
    for (int64_t ch = 0; ch < oc; ++ch) {
      const float x = v[ch * step];
      float &sc = s[static_cast<size_t>(ch)], &bc = b[static_cast<size_t>(ch)];
      switch (ep.ops[i]) {
        case PostOp::kMul:
          sc *= x;
          bc *= x;
          break;
        case PostOp::kSub: bc -= x; break;
        default: bc += x; break;  // BiasAdd, Add
      }
    }
  }
  folded.ops.clear();
  folded.args.clear();
  if (add) {
    bias = Tensor::empty(DType::kFloat32, Shape{oc});
    std::copy(b.begin(), b.end(), bias.mutable_data<float>());
    folded.ops.push_back(PostOp::kBiasAdd);
    folded.args.push_back(&bias);
  }
  folded.ops.insert(folded.ops.end(), ep.ops.begin() + static_cast<std::ptrdiff_t>(n),
                    ep.ops.end());
  folded.args.insert(folded.args.end(), ep.args.begin() + static_cast<std::ptrdiff_t>(n),
                     ep.args.end());
  folded.clip_min = ep.clip_min;
  folded.clip_max = ep.clip_max;
  scale.clear();
  if (mul) scale = std::move(s);
  return true;
}

void keep_residual(EpilogueCall& ep, const float* y, Tensor& kept) {
  for (const Tensor*& t : ep.args)
    if (arg_kind(*t) == ArgKind::kWhole && t->data<float>() == y) {
      kept = Tensor::empty(DType::kFloat32, t->shape());
      std::memcpy(kept.mutable_data<float>(), y, t->nbytes());
      t = &kept;
    }
}

bool took_residual(const EpilogueCall& ep, const void* y) {
  return std::any_of(ep.args.begin(), ep.args.end(), [&](const Tensor* t) {
    return arg_kind(*t) == ArgKind::kWhole && t->raw_data() == y;
  });
}

}  // namespace kiln::cpu
