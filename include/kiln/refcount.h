// Intrusive reference counting: Ref<T> holds a T* whose T has ref()/unref().
#pragma once
#include <atomic>
#include <cstdint>
#include <utility>

namespace kiln {

/// Base for polymorphic refcounted objects (resources, graph nodes).
/// Starts with a count of 1, owned by the creator (adopt with Ref::adopt).
class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  void ref() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  void unref() const {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  int32_t use_count() const { return refs_.load(std::memory_order_acquire); }

 protected:
  virtual ~RefCounted() = default;

 private:
  mutable std::atomic<int32_t> refs_{1};
};

template <typename T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}
  /// Takes a new reference to p.
  explicit Ref(T* p) : p_(p) {
    if (p_) p_->ref();
  }
  /// Takes over the caller's reference (no increment).
  static Ref adopt(T* p) {
    Ref r;
    r.p_ = p;
    return r;
  }
  Ref(const Ref& o) : p_(o.p_) {
    if (p_) p_->ref();
  }
  Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <typename U>
  Ref(const Ref<U>& o) : p_(o.get()) {
    if (p_) p_->ref();
  }
  Ref& operator=(const Ref& o) {
    Ref(o).swap(*this);
    return *this;
  }
  Ref& operator=(Ref&& o) noexcept {
    Ref(std::move(o)).swap(*this);
    return *this;
  }
  ~Ref() {
    if (p_) p_->unref();
  }
  void swap(Ref& o) noexcept { std::swap(p_, o.p_); }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  bool operator==(const Ref& o) const { return p_ == o.p_; }
  /// Gives up ownership without decrementing.
  T* release() { return std::exchange(p_, nullptr); }

 private:
  T* p_ = nullptr;
};

}  // namespace kiln
