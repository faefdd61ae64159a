#include <algorithm>
#include <cstdio>

#include "kiln/function.h"

namespace kiln {

std::string ArgSpec::to_string() const {
  std::string n = name.empty() ? std::string("None") : str_cat("'", name, "'");
  return str_cat("TensorSpec(shape=", shape.to_string(), ", dtype=tf.", dtype_name(dtype),
                 ", name=", n, ")");
}

Value::Value(Tensor t) : kind_(Kind::kTensor), tensor_(std::move(t)) {
  if (!tensor_.defined()) throw InvalidArgumentError("Value: undefined tensor");
}
Value::Value(ArgSpec s) : kind_(Kind::kSpec), spec_(std::make_shared<ArgSpec>(std::move(s))) {}
Value::Value(Variable v) : kind_(Kind::kVariable), variable_(std::move(v)) {
  if (!variable_.defined()) throw InvalidArgumentError("Value: undefined variable");
}
Value::Value(bool b) : kind_(Kind::kBool), i_(b) {}
Value::Value(int64_t v) : kind_(Kind::kInt), i_(v) {}
Value::Value(double v) : kind_(Kind::kFloat), f_(v) {}
Value::Value(std::string s) : kind_(Kind::kString), s_(std::move(s)) {}

Value Value::list(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::kList;
  v.items_ = std::make_shared<std::vector<Value>>(std::move(items));
  return v;
}
Value Value::tuple(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kTuple;
  return v;
}
Value Value::dict(std::vector<std::pair<std::string, Value>> items) {
  // Sorted by key (what keys and flattening use), the given order kept aside.
  std::vector<size_t> by_key(items.size());
  for (size_t i = 0; i < by_key.size(); ++i) by_key[i] = i;
  std::stable_sort(by_key.begin(), by_key.end(),
                   [&](size_t a, size_t b) { return items[a].first < items[b].first; });
  for (size_t i = 1; i < by_key.size(); ++i)
    if (items[by_key[i]].first == items[by_key[i - 1]].first)
      throw InvalidArgumentError(
          str_cat("Value::dict: duplicate key '", items[by_key[i]].first, "'"));
  Value v;
  v.kind_ = Kind::kDict;
  v.items_ = std::make_shared<std::vector<Value>>();
  v.keys_ = std::make_shared<std::vector<std::string>>();
  std::vector<size_t> order(items.size());
  bool sorted = true;
  for (size_t r = 0; r < by_key.size(); ++r) {
    v.keys_->push_back(std::move(items[by_key[r]].first));
    v.items_->push_back(std::move(items[by_key[r]].second));
    order[by_key[r]] = r;
    sorted &= by_key[r] == r;
  }
  if (!sorted) v.order_ = std::make_shared<std::vector<size_t>>(std::move(order));
  return v;
}

Value Value::opaque(uint64_t id, std::string repr) {
  Value v;
  v.kind_ = Kind::kOpaque;
  v.i_ = static_cast<int64_t>(id);
  v.s_ = std::move(repr);
  return v;
}

namespace {
[[noreturn]] void wrong_kind(const char* want, const Value& v) {
  throw InvalidArgumentError(str_cat("expected a ", want, ", got ", v.repr()));
}
}  // namespace

const Tensor& Value::tensor() const {
  if (kind_ != Kind::kTensor) wrong_kind("tensor", *this);
  return tensor_;
}
const ArgSpec& Value::spec() const {
  if (kind_ != Kind::kSpec) wrong_kind("TensorSpec", *this);
  return *spec_;
}
const Variable& Value::variable() const {
  if (kind_ != Kind::kVariable) wrong_kind("Variable", *this);
  return variable_;
}
bool Value::as_bool() const {
  if (kind_ != Kind::kBool) wrong_kind("bool", *this);
  return i_ != 0;
}
int64_t Value::as_int() const {
  if (kind_ != Kind::kInt) wrong_kind("int", *this);
  return i_;
}
double Value::as_float() const {
  if (kind_ == Kind::kInt) return static_cast<double>(i_);
  if (kind_ != Kind::kFloat) wrong_kind("float", *this);
  return f_;
}
const std::string& Value::as_string() const {
  if (kind_ != Kind::kString) wrong_kind("string", *this);
  return s_;
}
const std::vector<Value>& Value::items() const {
  if (!items_) wrong_kind("list, tuple or dict", *this);
  return *items_;
}
const std::vector<std::string>& Value::keys() const {
  if (!keys_) wrong_kind("dict", *this);
  return *keys_;
}

std::vector<size_t> Value::insertion_order() const {
  if (order_) return *order_;
  std::vector<size_t> order(items().size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  return order;
}

Value Value::with_items(std::vector<Value> items) const {
  if (kind_ != Kind::kList && kind_ != Kind::kTuple && kind_ != Kind::kDict)
    wrong_kind("list, tuple or dict", *this);
  if (items.size() != items_->size())
    throw InvalidArgumentError("Value::with_items: the item count differs");
  Value v;
  v.kind_ = kind_;
  v.items_ = std::make_shared<std::vector<Value>>(std::move(items));
  v.keys_ = keys_;
  v.order_ = order_;
  return v;
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::kNone: return "None";
    case Kind::kTensor: return tensor_.debug_string();
    case Kind::kSpec: return spec_->to_string();
    case Kind::kVariable: return variable_.to_string();
    case Kind::kBool: return i_ ? "True" : "False";
    case Kind::kInt: return std::to_string(i_);
    case Kind::kFloat: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", f_);
      std::string s = buf;
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
      return s;
    }
    case Kind::kString: return str_cat("'", s_, "'");
    case Kind::kOpaque: return s_;
    case Kind::kList:
    case Kind::kTuple: {
      std::string s = kind_ == Kind::kList ? "[" : "(";
      for (size_t i = 0; i < items_->size(); ++i) s += str_cat(i ? ", " : "", (*items_)[i].repr());
      if (kind_ == Kind::kTuple && items_->size() == 1) s += ",";
      return s + (kind_ == Kind::kList ? "]" : ")");
    }
    case Kind::kDict: {
      std::string s = "{";
      const std::vector<size_t> order = insertion_order();
      for (size_t i = 0; i < order.size(); ++i)
        s += str_cat(i ? ", " : "", "'", (*keys_)[order[i]], "': ", (*items_)[order[i]].repr());
      return s + "}";
    }
  }
  return "?";
}

std::string RetraceReason::to_string() const {
  return str_cat(argument, ": ", before, " -> ", after);
}

}  // namespace kiln
