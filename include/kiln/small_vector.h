// A vector of trivially copyable values with N elements stored inline, so the
// common case (shapes, attribute lists) never touches the heap.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <type_traits>

namespace kiln {

template <typename T, size_t N>
class SmallVec {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVec holds trivially copyable values");

 public:
  SmallVec() = default;
  SmallVec(std::initializer_list<T> il) { assign(il.begin(), il.size()); }
  SmallVec(const T* p, size_t n) { assign(p, n); }
  explicit SmallVec(size_t n, T v = T()) {
    resize(n);
    std::fill(begin(), end(), v);
  }
  SmallVec(const SmallVec& o) { assign(o.data(), o.size()); }
  SmallVec(SmallVec&& o) noexcept { move_from(o); }
  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) assign(o.data(), o.size());
    return *this;
  }
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this != &o) {
      release();
      move_from(o);
    }
    return *this;
  }
  ~SmallVec() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return heap_ ? heap_ : inline_; }
  const T* data() const { return heap_ ? heap_ : inline_; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void push_back(T v) {
    if (size_ == capacity()) grow(size_ * 2 + 1);
    data()[size_++] = v;
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  void resize(size_t n) {
    if (n > capacity()) grow(n);
    if (n > size_) std::memset(static_cast<void*>(data() + size_), 0, (n - size_) * sizeof(T));
    size_ = n;
  }
  void insert(size_t pos, T v) {
    push_back(v);
    std::rotate(begin() + pos, end() - 1, end());
  }
  void erase(size_t pos) {
    std::copy(begin() + pos + 1, end(), begin() + pos);
    --size_;
  }
  bool operator==(const SmallVec& o) const {
    return size_ == o.size_ && std::equal(begin(), end(), o.begin());
  }
  bool operator!=(const SmallVec& o) const { return !(*this == o); }

 private:
  size_t capacity() const { return heap_ ? cap_ : N; }
  void assign(const T* p, size_t n) {
    if (n > capacity()) grow(n);
    if (n) std::memmove(static_cast<void*>(data()), p, n * sizeof(T));
    size_ = n;
  }
  void grow(size_t n) {
    T* h = static_cast<T*>(std::malloc(n * sizeof(T)));
    if (!h) throw std::bad_alloc();
    if (size_) std::memcpy(static_cast<void*>(h), data(), size_ * sizeof(T));
    release();
    heap_ = h;
    cap_ = n;
  }
  void release() {
    if (heap_) {
      std::free(heap_);
      heap_ = nullptr;
    }
  }
  void move_from(SmallVec& o) {
    if (o.heap_) {
      heap_ = o.heap_;
      cap_ = o.cap_;
      o.heap_ = nullptr;
    } else if (o.size_) {
      std::memcpy(static_cast<void*>(inline_), o.inline_, o.size_ * sizeof(T));
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  T inline_[N];
  T* heap_ = nullptr;
  size_t cap_ = 0;
  size_t size_ = 0;
};

}  // namespace kiln
