// CPU kernels for the image codecs: DecodePng/EncodePng on libpng,
// DecodeJpeg/EncodeJpeg on libjpeg-turbo's TurboJPEG API, DecodeImage
// choosing by the file's signature. Encoded bytes are hostile: every
// libpng error ends in a clean InvalidArgument (libpng reports through
// longjmp, so the code between setjmp and the longjmp holds no C++ objects),
// and decoded sizes are checked before anything is allocated.
#include <png.h>
#include <turbojpeg.h>

#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "kernel_util.h"

namespace kiln::cpu {
namespace {

// Decoded images above this many bytes are refused (a 1 GB image).
constexpr int64_t kMaxImageBytes = int64_t{1} << 30;

void check_size(KernelContext& c, int64_t h, int64_t w, int64_t ch) {
  if (h <= 0 || w <= 0 || ch <= 0 || h > kMaxImageBytes / w || h * w > kMaxImageBytes / ch)
    c.fail("image of ", h, " x ", w, " x ", ch, " is empty or larger than ", kMaxImageBytes,
           " bytes");
}

// ---- PNG ----

// libpng's state for one call; plain data only (it crosses longjmp).
struct PngRead {
  const unsigned char* data;
  size_t size, pos;
  char error[200];
};

extern "C" void png_read_mem(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<PngRead*>(png_get_io_ptr(png));
  if (n > r->size - r->pos) png_error(png, "PNG data is truncated");
  std::memcpy(out, r->data + r->pos, n);
  r->pos += n;
}

extern "C" void png_on_error(png_structp png, png_const_charp msg) {
  auto* r = static_cast<PngRead*>(png_get_error_ptr(png));
  std::snprintf(r->error, sizeof r->error, "%s", msg);
  png_longjmp(png, 1);
}
extern "C" void png_on_warning(png_structp, png_const_charp) {}

// Header facts after the transformations for `want` channels (0: the file's).
struct PngInfo {
  png_uint_32 width = 0, height = 0;
  int channels = 0;
};

// Sets up reading with the transformations that give 8-bit `want`-channel
// pixels, reading the header into `info`. Called inside setjmp.
void png_setup(png_structp png, png_infop pi, int want, PngInfo* info) {
  png_set_read_fn(png, png_get_error_ptr(png), png_read_mem);
  png_set_user_limits(png, 1u << 24, 1u << 24);
  png_read_info(png, pi);
  const int type = png_get_color_type(png, pi);
  png_set_expand(png);  // palette -> RGB, low-bit gray -> 8 bit, tRNS -> alpha
  png_set_strip_16(png);
  const bool color = (type & PNG_COLOR_MASK_COLOR) != 0;
  const bool alpha = (type & PNG_COLOR_MASK_ALPHA) != 0 || png_get_valid(png, pi, PNG_INFO_tRNS);
  const int have = (color ? 3 : 1) + (alpha ? 1 : 0);
  const int ch = want ? want : have;
  if (ch <= 2 && color) png_set_rgb_to_gray_fixed(png, 1, 29900, 58700);  // Rec. 601, as TensorFlow
  if (ch >= 3 && !color) png_set_gray_to_rgb(png);
  if ((ch == 1 || ch == 3) && alpha) png_set_strip_alpha(png);
  if ((ch == 2 || ch == 4) && !alpha) png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);
  png_set_interlace_handling(png);
  png_read_update_info(png, pi);
  info->width = png_get_image_width(png, pi);
  info->height = png_get_image_height(png, pi);
  info->channels = png_get_channels(png, pi);
}

// Reads the header (out == nullptr) or the whole image into `out` (rows of
// `info.width * info.channels` bytes, `rows` row pointers). false: r.error says why.
bool png_run(PngRead& r, int want, PngInfo& info, unsigned char* out, png_bytep* rows) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, png_on_error, png_on_warning);
  if (!png) return false;
  png_infop pi = png_create_info_struct(png);
  if (!pi || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, pi ? &pi : nullptr, nullptr);
    return false;
  }
  png_setup(png, pi, want, &info);
  if (out) {
    const size_t stride = static_cast<size_t>(info.width) * static_cast<size_t>(info.channels);
    for (png_uint_32 y = 0; y < info.height; ++y) rows[y] = out + y * stride;
    png_read_image(png, rows);
    png_read_end(png, nullptr);
  }
  png_destroy_read_struct(&png, &pi, nullptr);
  return true;
}

bool is_png(const std::string& s) {
  return s.size() >= 8 && png_sig_cmp(reinterpret_cast<png_const_bytep>(s.data()), 0, 8) == 0;
}

Tensor decode_png(KernelContext& c, const std::string& bytes, int want) {
  if (!is_png(bytes)) c.fail("the contents are not a PNG image (no PNG signature)");
  PngRead r{reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 0, {0}};
  PngInfo info;
  if (!png_run(r, want, info, nullptr, nullptr)) c.fail("invalid PNG data: ", r.error);
  check_size(c, info.height, info.width, info.channels);
  Tensor out = Tensor::empty(DType::kUInt8, {static_cast<int64_t>(info.height),
                                             static_cast<int64_t>(info.width), info.channels});
  std::string rows(sizeof(png_bytep) * info.height, '\0');
  r.pos = 0;
  PngInfo again;
  if (!png_run(r, want, again, out.mutable_data<uint8_t>(),
               reinterpret_cast<png_bytep*>(rows.data())))
    c.fail("invalid PNG data: ", r.error);
  return out;
}

// ---- PNG encoding ----

struct PngWrite {
  std::string* out;
  char error[200];
};

// Appends to the output; an allocation failure becomes a libpng error (the
// exception must not cross libpng's frames).
bool append_bytes(std::string& out, png_bytep data, png_size_t n) noexcept {
  try {
    out.append(reinterpret_cast<const char*>(data), n);
    return true;
  } catch (...) {
    return false;
  }
}

extern "C" void png_write_mem(png_structp png, png_bytep data, png_size_t n) {
  auto* w = static_cast<PngWrite*>(png_get_io_ptr(png));
  if (!append_bytes(*w->out, data, n)) png_error(png, "out of memory for the PNG bytes");
}
extern "C" void png_write_flush(png_structp) {}
extern "C" void png_write_error(png_structp png, png_const_charp msg) {
  auto* w = static_cast<PngWrite*>(png_get_error_ptr(png));
  std::snprintf(w->error, sizeof w->error, "%s", msg);
  png_longjmp(png, 1);
}

bool png_encode(PngWrite& w, const unsigned char* px, png_uint_32 width, png_uint_32 height,
                int channels, int level, png_bytep* rows) {
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, &w, png_write_error, png_on_warning);
  if (!png) return false;
  png_infop pi = png_create_info_struct(png);
  if (!pi || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, pi ? &pi : nullptr);
    return false;
  }
  static const int kType[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                              PNG_COLOR_TYPE_RGB_ALPHA};
  png_set_write_fn(png, &w, png_write_mem, png_write_flush);
  if (level >= 0) png_set_compression_level(png, level);
  png_set_IHDR(png, pi, width, height, 8, kType[channels], PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, pi);
  const size_t stride = static_cast<size_t>(width) * static_cast<size_t>(channels);
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = const_cast<png_bytep>(px + y * stride);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &pi);
  return true;
}

void encode_png_kernel(KernelContext& c) {
  const Tensor& image = c.input(0);
  if (image.dtype() != DType::kUInt8)
    c.fail("image must be uint8, got ", dtype_name(image.dtype()));
  const int64_t h = image.dim(0), w = image.dim(1), ch = image.dim(2);
  const int64_t level = c.attr_int("compression");
  if (level < -1 || level > 9) c.fail("compression must be in [-1, 9], got ", level);
  if (h > PNG_UINT_31_MAX || w > PNG_UINT_31_MAX || h == 0 || w == 0)
    c.fail("image of ", h, " x ", w, " cannot be a PNG");
  std::string out;
  out.reserve(static_cast<size_t>(h * w * ch + h * w * ch / 64 + h + 4096));
  PngWrite st{&out, {0}};
  std::string rows(sizeof(png_bytep) * static_cast<size_t>(h), '\0');
  if (!png_encode(st, image.data<uint8_t>(), static_cast<png_uint_32>(w),
                  static_cast<png_uint_32>(h), static_cast<int>(ch), static_cast<int>(level),
                  reinterpret_cast<png_bytep*>(rows.data())))
    c.fail("PNG encoding failed: ", st.error);
  c.allocate_output(0).mutable_data<std::string>()[0] = std::move(out);
}

// ---- JPEG ----

// A TurboJPEG handle freed on scope exit.
struct TjHandle {
  tjhandle h;
  explicit TjHandle(tjhandle x) : h(x) {}
  ~TjHandle() {
    if (h) tjDestroy(h);
  }
  TjHandle(const TjHandle&) = delete;
  TjHandle& operator=(const TjHandle&) = delete;
};

bool is_jpeg(const std::string& s) {
  return s.size() >= 3 && static_cast<unsigned char>(s[0]) == 0xff &&
         static_cast<unsigned char>(s[1]) == 0xd8 && static_cast<unsigned char>(s[2]) == 0xff;
}

Tensor decode_jpeg(KernelContext& c, const std::string& bytes, int want) {
  const int64_t ratio = c.op().attr_index("ratio") >= 0 ? c.attr_int("ratio") : 1;
  const bool fancy = c.op().attr_index("fancy_upscaling") < 0 || c.attr_bool("fancy_upscaling");
  const bool recover =
      c.op().attr_index("try_recover_truncated") >= 0 && c.attr_bool("try_recover_truncated");
  const std::string dct = c.op().attr_index("dct_method") >= 0 ? c.attr_string("dct_method") : "";
  if (ratio != 1 && ratio != 2 && ratio != 4 && ratio != 8)
    c.fail("ratio must be 1, 2, 4 or 8, got ", ratio);
  if (!dct.empty() && dct != "INTEGER_FAST" && dct != "INTEGER_ACCURATE")
    c.fail("dct_method must be '', 'INTEGER_FAST' or 'INTEGER_ACCURATE', got '", dct, "'");
  if (!is_jpeg(bytes)) c.fail("the contents are not a JPEG image (no JPEG signature)");
  TjHandle tj(tjInitDecompress());
  if (!tj.h) c.fail("TurboJPEG could not start: ", tjGetErrorStr2(nullptr));
  auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto size = static_cast<unsigned long>(bytes.size());
  int w = 0, h = 0, sub = 0, space = 0;
  if (tjDecompressHeader3(tj.h, data, size, &w, &h, &sub, &space) != 0)
    c.fail("invalid JPEG data: ", tjGetErrorStr2(tj.h));
  if (w <= 0 || h <= 0) c.fail("invalid JPEG data: the header gives no image size");
  const int ch = want ? want : (space == TJCS_GRAY ? 1 : 3);
  const int sw = (w + static_cast<int>(ratio) - 1) / static_cast<int>(ratio);
  const int sh = (h + static_cast<int>(ratio) - 1) / static_cast<int>(ratio);
  check_size(c, sh, sw, ch);
  Tensor out = Tensor::empty(DType::kUInt8, {sh, sw, ch});
  int flags = TJFLAG_NOREALLOC;
  if (!fancy) flags |= TJFLAG_FASTUPSAMPLE;
  if (dct != "INTEGER_ACCURATE") flags |= TJFLAG_FASTDCT;  // TensorFlow's default is the fast DCT
  if (tjDecompress2(tj.h, data, size, out.mutable_data<uint8_t>(), sw, sw * ch, sh,
                    ch == 1 ? TJPF_GRAY : TJPF_RGB, flags) != 0) {
    const bool warning = tjGetErrorCode(tj.h) == TJERR_WARNING;
    if (!(warning && recover)) c.fail("invalid JPEG data or crop window: ", tjGetErrorStr2(tj.h));
  }
  return out;
}

void encode_jpeg_kernel(KernelContext& c) {
  const Tensor& image = c.input(0);
  if (image.dtype() != DType::kUInt8)
    c.fail("image must be uint8, got ", dtype_name(image.dtype()));
  const int64_t h = image.dim(0), w = image.dim(1), ch = image.dim(2);
  const std::string& format = c.attr_string("format");
  const int64_t quality = c.attr_int("quality");
  if (quality < 0 || quality > 100) c.fail("quality must be in [0, 100], got ", quality);
  const int want = format.empty() ? 0 : format == "grayscale" ? 1 : format == "rgb" ? 3 : -1;
  if (want < 0) c.fail("format must be '', 'grayscale' or 'rgb', got '", format, "'");
  if ((want && ch != want) || (ch != 1 && ch != 3))
    c.fail("image must have 1 or 3 channels", format.empty() ? "" : " matching format", ", got ",
           ch);
  if (h == 0 || w == 0 || h > 65535 || w > 65535)
    c.fail("image of ", h, " x ", w, " cannot be a JPEG");
  TjHandle tj(tjInitCompress());
  if (!tj.h) c.fail("TurboJPEG could not start: ", tjGetErrorStr2(nullptr));
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  int flags = c.attr_bool("progressive") ? TJFLAG_PROGRESSIVE : 0;
  const int sub = ch == 1                              ? TJSAMP_GRAY
                  : c.attr_bool("chroma_downsampling") ? TJSAMP_420
                                                       : TJSAMP_444;
  const int rc =
      tjCompress2(tj.h, image.data<uint8_t>(), static_cast<int>(w), static_cast<int>(w * ch),
                  static_cast<int>(h), ch == 1 ? TJPF_GRAY : TJPF_RGB, &buf, &size, sub,
                  static_cast<int>(quality), flags);
  std::string out;
  if (rc == 0) out.assign(reinterpret_cast<const char*>(buf), size);
  tjFree(buf);
  if (rc != 0) c.fail("JPEG encoding failed: ", tjGetErrorStr2(tj.h));
  c.allocate_output(0).mutable_data<std::string>()[0] = std::move(out);
}

// ---- decode kernels ----

const std::string& contents(KernelContext& c) {
  return c.input(0).data<std::string>()[0];
}

int channels_attr(KernelContext& c) {
  const int64_t ch = c.attr_int("channels");
  if (ch < 0 || ch > 4) c.fail("channels must be 0, 1, 2, 3 or 4, got ", ch);
  return static_cast<int>(ch);
}

void decode_png_kernel(KernelContext& c) {
  c.set_output(0, decode_png(c, contents(c), channels_attr(c)));
}

void decode_jpeg_kernel(KernelContext& c) {
  const int ch = channels_attr(c);
  if (ch == 2 || ch == 4) c.fail("JPEG images decode to 1 or 3 channels, got channels=", ch);
  c.set_output(0, decode_jpeg(c, contents(c), ch));
}

void decode_image_kernel(KernelContext& c) {
  const std::string& s = contents(c);
  const int ch = channels_attr(c);
  if (is_png(s)) return c.set_output(0, decode_png(c, s, ch));
  if (is_jpeg(s)) {
    if (ch == 2 || ch == 4) c.fail("JPEG images decode to 1 or 3 channels, got channels=", ch);
    return c.set_output(0, decode_jpeg(c, s, ch));
  }
  if (s.size() >= 3 && s.compare(0, 3, "GIF") == 0)
    c.fail("GIF images are not supported by kiln (PNG and JPEG are)");
  if (s.size() >= 2 && s.compare(0, 2, "BM") == 0)
    c.fail("BMP images are not supported by kiln (PNG and JPEG are)");
  c.fail("Unknown image file format. One of JPEG, PNG, GIF, BMP required.");
}

}  // namespace

void bind_image_kernels(OpTableBuilder& t) {
  t.kernel(OpId::DecodePng, decode_png_kernel);
  t.kernel(OpId::EncodePng, encode_png_kernel);
  t.kernel(OpId::DecodeJpeg, decode_jpeg_kernel);
  t.kernel(OpId::EncodeJpeg, encode_jpeg_kernel);
  t.kernel(OpId::DecodeImage, decode_image_kernel);
}

}  // namespace kiln::cpu
