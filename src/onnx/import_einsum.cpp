// ONNX import rule for Einsum: diagonals, then operands folded pairwise by
// broadcasting multiplication and summing the letters no later term needs,
// then a transpose into the output's order. Correct for every equation
// without broadcasting ellipses of different lengths; not a matmul lowering
// (large contractions use memory for the broadcast product).
#include <algorithm>
#include <set>

#include "onnx/import.h"

namespace kiln::onnx::detail {
namespace {

using C = ImportContext;

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

// x (letters `term`) transposed into the order of `order`'s letters, with size-1
// dims for letters it lacks.
Tensor align(const Tensor& x, const std::string& term, const std::string& order) {
  std::vector<int64_t> perm;
  for (char ch : order) {
    const size_t p = term.find(ch);
    if (p != std::string::npos) perm.push_back(static_cast<int64_t>(p));
  }
  Tensor y = perm.empty() ? x : transpose(x, perm);
  for (size_t i = 0; i < order.size(); ++i)
    if (term.find(order[i]) == std::string::npos) y = expand_dims(y, static_cast<int64_t>(i));
  return y;
}

// The diagonal over every letter repeated within `term`.
Tensor take_diagonals(C& c, Tensor x, std::string& term) {
  for (size_t p = 0; p < term.size(); ++p) {
    const size_t q = term.find(term[p], p + 1);
    if (q == std::string::npos) continue;
    const int64_t n = x.dim(static_cast<int64_t>(p));
    if (n < 0 || n != x.dim(static_cast<int64_t>(q))) c.fail("a diagonal needs equal, known dims");
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

// Terms with each "..." replaced by the internal letters of its dims
// (right-aligned over the longest), and the output term.
void expand_terms(C& c, std::vector<std::string>& terms, std::string& out, bool explicit_out) {
  std::vector<int64_t> n_ell(terms.size(), 0);
  int64_t longest = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    const int64_t rank = known_rank(c, k);
    const size_t e = terms[k].find("...");
    const int64_t letters =
        static_cast<int64_t>(terms[k].size()) - (e == std::string::npos ? 0 : 3);
    n_ell[k] = e == std::string::npos ? 0 : rank - letters;
    if (n_ell[k] < 0 || (e == std::string::npos && letters != rank))
      c.fail("term '", terms[k], "' does not match input ", k, "'s rank ", rank);
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
  std::map<char, int> count;  // implicit: the ellipsis, then letters seen once, sorted
  for (const auto& t : terms)
    for (char ch : t) ++count[ch];
  out = ell(longest);
  for (const auto& [ch, n] : count)
    if (n == 1 && ch > 64) out += ch;
}

}  // namespace

void einsum(ImportContext& c) {
  std::string eq;
  for (char ch : c.attr_string("equation"))
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
  if (terms.size() != c.num_inputs())
    c.fail(terms.size(), " terms for ", c.num_inputs(), " inputs");
  expand_terms(c, terms, out, arrow != std::string::npos);
  for (const auto& t : terms)  // letters, or the ellipsis' internal ones (< 32)
    for (char ch : t)
      if (!std::isalpha(static_cast<unsigned char>(ch)) && !(ch > 0 && ch < 32))
        c.fail("equation '", eq, "' is malformed");
  std::set<char> seen;
  for (const auto& t : terms) seen.insert(t.begin(), t.end());
  for (char ch : out)
    if (!seen.count(ch) || std::count(out.begin(), out.end(), ch) != 1)
      c.fail("output letters must be unique and appear in an input");
  std::vector<Tensor> xs;
  for (size_t k = 0; k < terms.size(); ++k) xs.push_back(take_diagonals(c, c.input(k), terms[k]));
  // Letters needed after operand k: the output's and those of later operands.
  auto needed_after = [&](size_t k) {
    std::set<char> keep(out.begin(), out.end());
    for (size_t j = k + 1; j < terms.size(); ++j) keep.insert(terms[j].begin(), terms[j].end());
    return keep;
  };
  std::string acc_term = terms[0];
  std::set<char> keep0 = needed_after(0);
  Tensor acc = sum_out(xs[0], acc_term, keep0);
  for (size_t k = 1; k < terms.size(); ++k) {
    std::set<char> keep = needed_after(k);
    std::set<char> keep_b = keep;
    keep_b.insert(acc_term.begin(), acc_term.end());
    std::string b_term = terms[k];
    const Tensor b = sum_out(xs[k], b_term, keep_b);
    std::string order = acc_term;
    for (char ch : b_term)
      if (order.find(ch) == std::string::npos) order += ch;
    acc = align(acc, acc_term, order) * align(b, b_term, order);
    acc_term = order;
    acc = sum_out(acc, acc_term, keep);
  }
  std::vector<int64_t> perm;
  for (char ch : out) perm.push_back(static_cast<int64_t>(acc_term.find(ch)));
  c.set_output(0, perm.empty() ? identity(acc) : transpose(acc, perm));
}

}  // namespace kiln::onnx::detail
