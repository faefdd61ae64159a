// Image codecs (tf.io.decode_png / encode_png / decode_jpeg / encode_jpeg /
// decode_image): definitions and inference. Decoded sizes are known only when
// the step runs; the kernels are in src/kernels/cpu/image_codecs.cpp.
#include <cstdint>

#include "families.h"
#include "kiln/context.h"
#include "kiln/ops.h"

namespace kiln {
namespace {

// Input 0: a scalar string (the encoded bytes).
void expect_contents(InferContext& c) {
  if (c.dtype(0) != DType::kString)
    c.fail("contents must be a string, got ", dtype_name(c.dtype(0)));
  if (c.shape(0).rank_known() && c.shape(0).rank() != 0)
    c.fail("contents must be a scalar, got shape ", c.shape(0).debug_string());
}

int64_t channels_of(InferContext& c, bool jpeg) {
  const int64_t ch = c.attr_int("channels");
  if (ch < 0 || ch > 4 || (jpeg && (ch == 2 || ch == 4)))
    c.fail("channels must be ", jpeg ? "0, 1 or 3" : "0, 1, 2, 3 or 4", ", got ", ch);
  return ch;
}

template <bool kJpeg>
void infer_decode(InferContext& c) {
  expect_contents(c);
  if (c.op().attr_index("dtype") >= 0 && c.attr_dtype("dtype") != DType::kUInt8)
    c.fail("dtype must be uint8 (kiln has no uint16), got ", dtype_name(c.attr_dtype("dtype")));
  const int64_t ch = channels_of(c, kJpeg);
  c.set_output(0, DType::kUInt8, Shape{-1, -1, ch ? ch : -1});
}

void infer_decode_image(InferContext& c) {
  expect_contents(c);
  if (c.attr_dtype("dtype") != DType::kUInt8)
    c.fail("dtype must be uint8 (kiln has no uint16 and decodes to uint8), got ",
           dtype_name(c.attr_dtype("dtype")));
  const int64_t ch = channels_of(c, false);
  // Animations (GIF) would be 4-D; kiln decodes PNG and JPEG, always 3-D.
  c.set_output(0, DType::kUInt8, Shape{-1, -1, ch ? ch : -1});
}

// image [h, w, c] uint8 -> its encoding, a scalar string.
template <bool kJpeg>
void infer_encode(InferContext& c) {
  if (c.dtype(0) != DType::kUInt8)
    c.fail("image must be uint8", kJpeg ? "" : " (kiln has no uint16)", ", got ",
           dtype_name(c.dtype(0)));
  const Shape& s = c.shape(0);
  if (s.rank_known()) {
    if (s.rank() != 3) c.fail("image must be 3-dimensional, got shape ", s.debug_string());
    const int64_t ch = s.dim(2);
    if (ch >= 0 && (kJpeg ? (ch != 1 && ch != 3) : (ch < 1 || ch > 4)))
      c.fail("image must have ", kJpeg ? "1 or 3" : "1 to 4", " channels, got ", ch);
  }
  c.set_output(0, DType::kString, Shape{});
}

}  // namespace

void define_image_ops(OpTableBuilder& t) {
  const uint32_t traits = kNoGradient | kNoJit;
  t.def(OpId::DecodePng)
      .tf()
      .inputs({"contents"})
      .outputs({"image"})
      .attr("channels", AttrType::kInt, int64_t{0})
      .attr("dtype", AttrType::kDType, DType::kUInt8)
      .traits(traits)
      .infer(infer_decode<false>);
  t.def(OpId::DecodeJpeg)
      .tf()
      .inputs({"contents"})
      .outputs({"image"})
      .attr("channels", AttrType::kInt, int64_t{0})
      .attr("ratio", AttrType::kInt, int64_t{1})
      .attr("fancy_upscaling", AttrType::kBool, true)
      .attr("try_recover_truncated", AttrType::kBool, false)
      .attr("acceptable_fraction", AttrType::kFloat, 1.0)
      .attr("dct_method", AttrType::kString, std::string())
      .traits(traits)
      .infer(infer_decode<true>);
  t.def(OpId::DecodeImage)
      .tf()
      .inputs({"contents"})
      .outputs({"image"})
      .attr("channels", AttrType::kInt, int64_t{0})
      .attr("dtype", AttrType::kDType, DType::kUInt8)
      .attr("expand_animations", AttrType::kBool, true)
      .traits(traits)
      .infer(infer_decode_image);
  t.def(OpId::EncodePng)
      .tf()
      .inputs({"image"})
      .outputs({"contents"})
      .attr("compression", AttrType::kInt, int64_t{-1})
      .traits(traits)
      .infer(infer_encode<false>);
  t.def(OpId::EncodeJpeg)
      .tf()
      .inputs({"image"})
      .outputs({"contents"})
      .attr("format", AttrType::kString, std::string())
      .attr("quality", AttrType::kInt, int64_t{95})
      .attr("progressive", AttrType::kBool, false)
      .attr("optimize_size", AttrType::kBool, false)
      .attr("chroma_downsampling", AttrType::kBool, true)
      .attr("density_unit", AttrType::kString, std::string("in"))
      .attr("x_density", AttrType::kInt, int64_t{300})
      .attr("y_density", AttrType::kInt, int64_t{300})
      .attr("xmp_metadata", AttrType::kString, std::string())
      .traits(traits)
      .infer(infer_encode<true>);
}

}  // namespace kiln
