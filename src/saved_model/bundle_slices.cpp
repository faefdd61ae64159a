#include "saved_model/bundle_slices.h"

#include <cstring>

#include "kiln/status.h"

namespace kiln::checkpoint::slices {
namespace {

// OrderedCode's encodings (strings and numbers that sort as their bytes do).
void put_unsigned(std::string& out, uint64_t v) {
  int n = 0;
  for (uint64_t x = v; x; x >>= 8) ++n;
  out.push_back(static_cast<char>(n));
  for (int i = n - 1; i >= 0; --i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void put_string(std::string& out, std::string_view s) {
  for (char c : s) {
    if (c == '\0') {
      out.append("\x00\xff", 2);
    } else if (c == '\xff') {
      out.append("\xff\x00", 2);
    } else {
      out.push_back(c);
    }
  }
  out.append("\x00\x01", 2);
}

// A signed number: a unary length prefix in the leading bits, then the value
// in two's complement, big-endian, in 1 to 10 bytes.
void put_signed(std::string& out, int64_t v) {
  static constexpr unsigned char kHeader[11][2] = {{0, 0},    {0x80, 0},    {0xc0, 0},   {0xe0, 0},
                                                   {0xf0, 0}, {0xf8, 0},    {0xfc, 0},   {0xfe, 0},
                                                   {0xff, 0}, {0xff, 0x80}, {0xff, 0xc0}};
  const uint64_t x = v < 0 ? ~static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  int len = 1;
  while (len < 10 && 7 * len - 1 < 64 && x >= (uint64_t{1} << (7 * len - 1))) ++len;
  unsigned char buf[10];
  const unsigned char sign = v < 0 ? 0xff : 0;
  buf[0] = buf[1] = sign;
  for (int i = 0; i < 8; ++i)
    buf[2 + i] = static_cast<unsigned char>(static_cast<uint64_t>(v) >> (56 - 8 * i));
  unsigned char* b = buf + 10 - len;
  b[0] ^= kHeader[len][0];
  if (len > 1) b[1] ^= kHeader[len][1];
  out.append(reinterpret_cast<const char*>(b), static_cast<size_t>(len));
}

bool overlap(const Slice& a, const Slice& b) {
  for (size_t d = 0; d < a.start.size(); ++d)
    if (a.start[d] + a.length[d] <= b.start[d] || b.start[d] + b.length[d] <= a.start[d])
      return false;
  return true;
}

}  // namespace

int64_t Slice::elements() const {
  int64_t n = 1;
  for (int64_t l : length) n *= l;
  return n;
}

std::string slice_key(std::string_view name, const std::vector<int64_t>& start,
                      const std::vector<int64_t>& length, const std::vector<bool>& full) {
  std::string k;
  put_unsigned(k, 0);
  put_string(k, name);
  put_unsigned(k, start.size());
  for (size_t d = 0; d < start.size(); ++d) {
    put_signed(k, full[d] ? 0 : start[d]);
    put_signed(k, full[d] ? -1 : length[d]);
  }
  return k;
}

std::vector<Slice> read_slices(
    const std::string& name, const std::vector<int64_t>& shape,
    const google::protobuf::RepeatedPtrField<tfproto::TensorSliceProto>& s, const std::string& at) {
  constexpr int kMaxSlices = 1 << 16;
  if (s.size() > kMaxSlices) throw DataLossError(str_cat(at, ": ", s.size(), " slices"));
  const size_t rank = shape.size();
  std::vector<Slice> out;
  int64_t total = 0, n = 1;
  for (int64_t d : shape) n *= d;
  for (const auto& p : s) {
    if (static_cast<size_t>(p.extent_size()) > rank || rank == 0)
      throw DataLossError(str_cat(at, ": a slice of rank ", p.extent_size(), " for rank ", rank));
    Slice sl;
    std::vector<bool> full(rank, true);
    for (size_t d = 0; d < rank; ++d) {
      int64_t st = 0, len = shape[d];
      if (d < static_cast<size_t>(p.extent_size())) {
        const auto& e = p.extent(static_cast<int>(d));
        full[d] = !e.has_length();
        st = e.start();
        if (e.has_length()) len = e.length();
        if (full[d] && st != 0) throw DataLossError(str_cat(at, ": a full extent starts at ", st));
      }
      if (st < 0 || len < 0 || st > shape[d] || len > shape[d] - st)
        throw DataLossError(str_cat(at, ": slice [", st, ", +", len, ") of dimension ", d,
                                    " (size ", shape[d], ")"));
      sl.start.push_back(st);
      sl.length.push_back(len);
    }
    sl.key = slice_key(name, sl.start, sl.length, full);
    for (const Slice& o : out)
      if (sl.elements() && o.elements() && overlap(sl, o))
        throw DataLossError(str_cat(at, ": two of its slices overlap"));
    total += sl.elements();
    out.push_back(std::move(sl));
  }
  if (total != n)
    throw DataLossError(str_cat(at, ": its slices hold ", total, " of its ", n, " elements"));
  return out;
}

std::string join_slices(const std::vector<int64_t>& shape, size_t item,
                        const std::vector<Slice>& slices,
                        const std::function<std::string_view(const Slice&)>& bytes_of) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::string out(static_cast<size_t>(n) * item, '\0');
  const size_t rank = shape.size();
  std::vector<int64_t> stride(rank, 1);  // elements per step of each dimension
  for (size_t d = rank - 1; d > 0; --d) stride[d - 1] = stride[d] * shape[d];
  for (const Slice& s : slices) {
    if (!s.elements()) continue;
    const std::string_view b = bytes_of(s);
    const size_t row = static_cast<size_t>(s.length[rank - 1]) * item;
    std::vector<int64_t> idx(rank, 0);  // position inside the slice, last dimension 0
    for (size_t src = 0; src < b.size(); src += row) {
      int64_t dst = 0;
      for (size_t d = 0; d < rank; ++d) dst += (s.start[d] + idx[d]) * stride[d];
      std::memcpy(out.data() + static_cast<size_t>(dst) * item, b.data() + src, row);
      for (size_t d = rank - 1; d-- > 0;) {  // next row: carry from the second-last dimension
        if (++idx[d] < s.length[d]) break;
        idx[d] = 0;
      }
    }
  }
  return out;
}

}  // namespace kiln::checkpoint::slices
