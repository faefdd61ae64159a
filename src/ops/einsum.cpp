// einsum (tf.einsum, ONNX Einsum, TensorFlow's Einsum op): diagonals first,
// letters no later term needs summed out, then operands combined pairwise —
// as one batched matmul (batch, free and contracted letters grouped by a
// transpose and a reshape each) when both have contracted letters, else by a
// broadcasting product — and a transpose into the output's order.
#include <algorithm>
#include <map>
#include <set>

#include "kiln/ops.h"

namespace kiln {
namespace {

[[noreturn]] void bad(const std::string& eq, const std::string& why) {
  throw InvalidArgumentError(str_cat("einsum '", eq, "': ", why));
}

// Sums `x` over the letters of `term` not in `keep`; updates `term`.
Tensor sum_out(const Tensor& x, std::string& term, const std::set<char>& keep) {
  std::vector<int64_t> axes;
  std::string rest;
  for (size_t i = 0; i < term.size(); ++i) {
    if (keep.count(term[i]))
      rest += term[i];
    else
      axes.push_back(static_cast<int64_t>(i));
  }
  term = rest;
  return axes.empty() ? x : reduce_sum(x, axes);
}

// x (letters `term`) transposed into `order`'s letters, size-1 dims for those it lacks.
Tensor align(const Tensor& x, const std::string& term, const std::string& order) {
  std::vector<int64_t> perm;
  for (char ch : order) {
    const size_t p = term.find(ch);
    if (p != std::string::npos) perm.push_back(static_cast<int64_t>(p));
  }
  bool moved = false;
  for (size_t i = 0; i < perm.size(); ++i) moved |= perm[i] != static_cast<int64_t>(i);
  Tensor y = moved ? transpose(x, perm) : x;
  for (size_t i = 0; i < order.size(); ++i)
    if (term.find(order[i]) == std::string::npos) y = expand_dims(y, static_cast<int64_t>(i));
  return y;
}

// The diagonal over every letter repeated within `term`.
Tensor take_diagonals(const std::string& eq, Tensor x, std::string& term) {
  for (size_t p = 0; p < term.size(); ++p) {
    const size_t q = term.find(term[p], p + 1);
    if (q == std::string::npos) continue;
    const int64_t n = x.shape().dim(static_cast<int64_t>(p));
    if (n < 0 || n != x.shape().dim(static_cast<int64_t>(q)))
      bad(eq, "a diagonal needs equal, known dims");
    std::vector<int64_t> shape(term.size(), 1);
    shape[p] = shape[q] = n;
    const Tensor eye = cast(
        reshape(one_hot(range(int64_t{0}, n, int64_t{1}, DType::kInt64), n), shape), x.dtype());
    x = reduce_sum(x * eye, {static_cast<int64_t>(q)});
    term.erase(q, 1);
    --p;  // the letter may repeat again
  }
  return x;
}

// Each "..." replaced by internal letters (1, 2, ...) of its dims, right-aligned
// over the longest; the implicit output is the ellipsis then letters seen once.
void expand_terms(const std::string& eq, const std::vector<Tensor>& xs,
                  std::vector<std::string>& terms, std::string& out, bool explicit_out) {
  std::vector<int64_t> n_ell(terms.size(), 0);
  int64_t longest = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    if (!xs[k].shape().rank_known()) bad(eq, str_cat("operand ", k, " has an unknown rank"));
    const int64_t rank = xs[k].shape().rank();
    const size_t e = terms[k].find("...");
    const int64_t letters =
        static_cast<int64_t>(terms[k].size()) - (e == std::string::npos ? 0 : 3);
    n_ell[k] = e == std::string::npos ? 0 : rank - letters;
    if (n_ell[k] < 0 || (e == std::string::npos && letters != rank))
      bad(eq, str_cat("term '", terms[k], "' does not match operand ", k, "'s rank ", rank));
    longest = std::max(longest, n_ell[k]);
  }
  auto ell = [&](int64_t n) {
    std::string s;
    for (int64_t i = longest - n; i < longest; ++i) s += static_cast<char>(1 + i);
    return s;
  };
  for (size_t k = 0; k < terms.size(); ++k) {
    const size_t e = terms[k].find("...");
    if (e != std::string::npos) terms[k].replace(e, 3, ell(n_ell[k]));
  }
  if (explicit_out) {
    const size_t e = out.find("...");
    if (e != std::string::npos) out.replace(e, 3, ell(longest));
    return;
  }
  std::map<char, int> count;
  for (const auto& t : terms)
    for (char ch : t) ++count[ch];
  out = ell(longest);
  for (const auto& [ch, n] : count)
    if (n == 1 && ch > 64) out += ch;
}

// The product of `x`'s dims `axes` as an int64 vector of one element.
Tensor dims_product(const Tensor& s, const std::vector<int64_t>& axes) {
  if (axes.empty()) return constant(std::vector<int64_t>{1}, Shape{1});
  const Tensor idx = constant(axes, Shape{static_cast<int64_t>(axes.size())});
  return reshape(reduce_prod(gather(s, idx)), std::vector<int64_t>{1});
}

// a (letters ta) x b (letters tb) as one batched matmul over the letters both
// share that `keep` needs (batch), those only one has (free) and those neither
// keeps (contracted); the result's letters go to `term`.
Tensor contract(const Tensor& a, const std::string& ta, const Tensor& b, const std::string& tb,
                const std::set<char>& keep, std::string& term) {
  std::string batch, left, right, inner;
  for (char ch : ta) {
    const bool in_b = tb.find(ch) != std::string::npos;
    (in_b ? (keep.count(ch) ? batch : inner) : left) += ch;
  }
  for (char ch : tb)
    if (ta.find(ch) == std::string::npos) right += ch;
  const Tensor A = align(a, ta, batch + left + inner), B = align(b, tb, batch + inner + right);
  const Tensor sa = shape(A, DType::kInt64), sb = shape(B, DType::kInt64);
  auto axes = [](size_t from, size_t n) {
    std::vector<int64_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<int64_t>(from + i);
    return v;
  };
  const size_t nb = batch.size(), nl = left.size(), ni = inner.size(), nr = right.size();
  const Tensor bdims = dims_product(sa, axes(0, nb));
  const Tensor a3 = reshape(
      A, concat({bdims, dims_product(sa, axes(nb, nl)), dims_product(sa, axes(nb + nl, ni))}, 0));
  const Tensor b3 = reshape(
      B, concat({bdims, dims_product(sb, axes(nb, ni)), dims_product(sb, axes(nb + ni, nr))}, 0));
  const Tensor c3 = matmul(a3, b3);
  std::vector<Tensor> parts;
  if (nb) parts.push_back(slice(sa, std::vector<int64_t>{0}, std::vector<int64_t>{int64_t(nb)}));
  if (nl)
    parts.push_back(
        slice(sa, std::vector<int64_t>{int64_t(nb)}, std::vector<int64_t>{int64_t(nl)}));
  if (nr)
    parts.push_back(
        slice(sb, std::vector<int64_t>{int64_t(nb + ni)}, std::vector<int64_t>{int64_t(nr)}));
  term = batch + left + right;
  if (parts.empty()) return reshape(c3, std::vector<int64_t>{});
  return reshape(c3, parts.size() == 1 ? parts[0] : concat(parts, 0));
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& inputs) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow),
              out = arrow == std::string::npos ? "" : eq.substr(arrow + 2);
  std::vector<std::string> terms;
  for (size_t b = 0;;) {
    const size_t e = lhs.find(',', b);
    terms.push_back(lhs.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  if (terms.size() != inputs.size())
    bad(eq, str_cat(terms.size(), " terms for ", inputs.size(), " operands"));
  expand_terms(eq, inputs, terms, out, arrow != std::string::npos);
  for (const auto& t : terms)  // letters, or the ellipsis' internal ones (< 32)
    for (char ch : t)
      if (!std::isalpha(static_cast<unsigned char>(ch)) && !(ch > 0 && ch < 32))
        bad(eq, "malformed");
  std::set<char> seen;
  for (const auto& t : terms) seen.insert(t.begin(), t.end());
  for (char ch : out)
    if (!seen.count(ch) || std::count(out.begin(), out.end(), ch) != 1)
      bad(eq, "output letters must be unique and appear in an operand");
  std::vector<Tensor> xs;
  for (size_t k = 0; k < terms.size(); ++k) xs.push_back(take_diagonals(eq, inputs[k], terms[k]));
  auto needed_after = [&](size_t k) {  // the output's letters and later operands'
    std::set<char> keep(out.begin(), out.end());
    for (size_t j = k + 1; j < terms.size(); ++j) keep.insert(terms[j].begin(), terms[j].end());
    return keep;
  };
  std::string acc_term = terms[0];
  Tensor acc = sum_out(xs[0], acc_term, needed_after(0));
  for (size_t k = 1; k < terms.size(); ++k) {
    const std::set<char> keep = needed_after(k);
    std::set<char> keep_b = keep;
    keep_b.insert(acc_term.begin(), acc_term.end());
    std::string b_term = terms[k];
    const Tensor b = sum_out(xs[k], b_term, keep_b);
    bool shared_sum = false;  // a letter both have that nothing later needs
    for (char ch : b_term) shared_sum |= acc_term.find(ch) != std::string::npos && !keep.count(ch);
    if (shared_sum && is_floating(acc.dtype())) {
      std::string t;
      acc = contract(acc, acc_term, b, b_term, keep, t);
      acc_term = t;
      continue;
    }
    std::string order = acc_term;
    for (char ch : b_term)
      if (order.find(ch) == std::string::npos) order += ch;
    acc = align(acc, acc_term, order) * align(b, b_term, order);
    acc_term = order;
    acc = sum_out(acc, acc_term, keep);
  }
  std::vector<int64_t> perm;
  for (char ch : out) perm.push_back(static_cast<int64_t>(acc_term.find(ch)));
  bool moved = false;
  for (size_t i = 0; i < perm.size(); ++i) moved |= perm[i] != static_cast<int64_t>(i);
  return moved ? transpose(acc, perm) : identity(acc);
}

}  // namespace kiln
