// String ops (tf.strings): TensorFlow's op types, inputs, attributes and
// semantics. Strings are byte strings (std::string elements); UTF-8 is only
// interpreted where a `unit` of "UTF8_CHAR" (or a split into characters) asks
// for it. No op trusts its input to be valid UTF-8:
// - counting UTF-8 characters counts the bytes that are not continuation bytes
//   (10xxxxxx), so each stray byte of an invalid sequence counts as one
//   character (TensorFlow counts the same way);
// - Substr with UTF8_CHAR moves over a lead byte and the continuation bytes
//   after it; splitting into characters yields U+FFFD for each byte that does
//   not start a valid sequence (TensorFlow's errors="replace").
// None of these ops is differentiable (kNoGradient).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

/// StringLength: the length of each string, int32, same shape. `unit` is
/// "BYTE" (bytes) or "UTF8_CHAR" (bytes that are not UTF-8 continuation bytes).
Tensor string_length(const Tensor& input, const std::string& unit = "BYTE");

/// StringToHashBucketFast: each string's bucket in [0, num_buckets), int64,
/// same shape: FarmHash's Fingerprint64 modulo num_buckets (TensorFlow's
/// buckets; stable across runs and machines, not meant to resist an adversary).
Tensor string_to_hash_bucket_fast(const Tensor& input, int64_t num_buckets);
/// StringToHashBucketStrong: the same with SipHash-2-4 keyed by `key` (two
/// integers, the 128-bit secret), for inputs an adversary may choose.
Tensor string_to_hash_bucket_strong(const Tensor& input, int64_t num_buckets,
                                    const std::vector<int64_t>& key);

/// ReadFile: the bytes of the file named by the scalar string `filename`
/// (NotFoundError when absent; ResourceExhausted above the allocation cap).
Tensor read_file(const Tensor& filename);
/// WriteFile: writes the scalar string `contents` to `filename`, replacing it
/// (the parent directory must exist).
void write_file(const Tensor& filename, const Tensor& contents);

/// StringJoin: joins the strings of `inputs` element by element with
/// `separator` between them. Non-scalar inputs must all have the same shape;
/// scalars are repeated (TensorFlow does not broadcast further). No inputs
/// give the scalar "".
Tensor string_join(const std::vector<Tensor>& inputs, const std::string& separator = "");

/// ReduceJoin: joins the strings of `inputs` along the axes in
/// `reduction_indices` (int32/int64, negative counts from the end, no
/// duplicates), with `separator` between them. TensorFlow's order: the first
/// listed axis varies fastest ([[a, b], [c, d]] over [0, 1] is "acbd", over
/// [1, 0] "abcd"); an empty list joins nothing (the input, unchanged).
/// Reducing an axis of length 0 gives "".
Tensor reduce_join(const Tensor& inputs, const Tensor& reduction_indices, bool keep_dims = false,
                   const std::string& separator = "");
/// The same with the axes as a list; std::nullopt joins every axis in
/// row-major order (tf.strings.reduce_join's axis=None).
Tensor reduce_join(const Tensor& inputs, std::optional<std::vector<int64_t>> axis = std::nullopt,
                   bool keep_dims = false, const std::string& separator = "");

/// StringLower / StringUpper: ASCII case mapping of every byte. `encoding` is
/// "" or "utf-8" (as TensorFlow); bytes outside ASCII are left as they are in
/// both cases (TensorFlow's "utf-8" also maps non-ASCII letters).
Tensor string_lower(const Tensor& input, const std::string& encoding = "");
Tensor string_upper(const Tensor& input, const std::string& encoding = "");

/// StringStrip: the strings without leading and trailing ASCII whitespace
/// (space, \t, \n, \v, \f, \r).
Tensor string_strip(const Tensor& input);

/// Substr: for each string, `len` units from position `pos` (unit "BYTE" or
/// "UTF8_CHAR"). `pos` and `len` are int32 or int64 of one dtype and one shape,
/// which broadcasts with the input's (NumPy rules). A negative `pos` counts
/// from the end; |pos| > the string's length is InvalidArgument (a pos equal
/// to the length gives ""). `len` is capped at the end of the string. A
/// negative `len` means "to the end" with BYTE and gives "" with UTF8_CHAR
/// (TensorFlow's kernels do the same).
Tensor substr(const Tensor& input, const Tensor& pos, const Tensor& len,
              const std::string& unit = "BYTE");
Tensor substr(const Tensor& input, int64_t pos, int64_t len, const std::string& unit = "BYTE");

/// AsString: numbers and bools as strings (printf formatting, as
/// TensorFlow): integers "%d"; floats "%f" with 6 decimals unless `precision`
/// >= 0 (then that many), `scientific` "%e", `shortest` "%g"; `width` pads to
/// that many characters with spaces, or with `fill` "0" (zeros); the other
/// fills are printf flags ("-" left-aligns, "+" signs, " ", "#"). Bools are
/// "true"/"false"; strings pass through (padded to `width`). float16/bfloat16
/// print as float32; complex numbers as "(real,imag)", each part a float.
Tensor as_string(const Tensor& input, int64_t precision = -1, bool scientific = false,
                 bool shortest = false, int64_t width = -1, const std::string& fill = "");

/// StringToNumber: parses each string as `out_type` (float32, float64, int32,
/// int64). Leading and trailing whitespace is allowed. Integers are decimal
/// with an optional '-' and must fit the dtype; floats accept decimal and
/// exponent forms, an optional sign, "0x" hexadecimal, and inf/nan (any case);
/// values beyond the range become +-inf. A string that does not parse is
/// InvalidArgument "StringToNumberOp could not correctly convert string: ..."
/// (TensorFlow's message).
Tensor string_to_number(const Tensor& input, DType out_type = DType::kFloat32);

/// RegexReplace: replaces the matches of `pattern` (RE2 syntax, as
/// TensorFlow; a scalar string) in each string by `rewrite`, where \0..\9 are
/// the match and its groups and \\ a backslash; every match with
/// `replace_global`, else the first. An invalid pattern or rewrite is
/// InvalidArgument.
Tensor regex_replace(const Tensor& input, const Tensor& pattern, const Tensor& rewrite,
                     bool replace_global = true);
Tensor regex_replace(const Tensor& input, const std::string& pattern, const std::string& rewrite,
                     bool replace_global = true);
/// RegexFullMatch: whether each whole string matches `pattern` (RE2), bool.
Tensor regex_full_match(const Tensor& input, const Tensor& pattern);
Tensor regex_full_match(const Tensor& input, const std::string& pattern);

/// A batch of split strings as a sparse matrix: `indices` [N, 2] int64 (row,
/// position), `values` [N] string, `dense_shape` [2] int64 (rows, longest row).
struct StringSplitResult {
  Tensor indices;
  Tensor values;
  Tensor dense_shape;
};

/// UnsortedSegmentJoin: output[k, ...] joins, with `separator`, the strings
/// inputs[i..., ...] whose segment_ids[i...] == k, in row-major order of i.
/// `segment_ids` (int32/int64) has a prefix of inputs' shape; the output is
/// [num_segments] + the rest of inputs' shape; empty segments give "". An id
/// outside [0, num_segments) is InvalidArgument (as TensorFlow).
Tensor unsorted_segment_join(const Tensor& inputs, const Tensor& segment_ids,
                             const Tensor& num_segments, const std::string& separator = "");

/// StringSplitV2: splits each string of the 1-D `input` at `sep` (a scalar
/// string), at most `maxsplit` times (-1: no limit), as Python's str.split: a
/// non-empty `sep` gives empty pieces between adjacent separators; an empty
/// `sep` splits at runs of ASCII whitespace and drops leading and trailing
/// whitespace. N depends on the values: a traced graph has unknown N.
StringSplitResult string_split(const Tensor& input, const Tensor& sep, int64_t maxsplit = -1);
StringSplitResult string_split(const Tensor& input, const std::string& sep = "",
                               int64_t maxsplit = -1);

/// _StringCharSplit (kiln's own op, not TensorFlow's): splits each string of
/// the 1-D `input` into bytes (unit "BYTE") or UTF-8 characters ("UTF8_CHAR",
/// each byte that does not start a valid sequence becomes U+FFFD), in
/// StringSplitV2's sparse form. Behind tf.strings.bytes_split/unicode_split.
StringSplitResult string_char_split(const Tensor& input, const std::string& unit = "BYTE");

/// StringFormat: `template` with each `placeholder` replaced by the next
/// tensor, printed as tf.strings.format prints it ("[1 2 3]", strings in
/// double quotes with C escapes, at most `summarize` elements at each end of
/// an axis, -1 for all). The number of placeholders must equal the number of
/// inputs. A scalar string.
Tensor string_format(const std::string& template_, const std::vector<Tensor>& inputs,
                     const std::string& placeholder = "{}", int64_t summarize = 3);

}  // namespace kiln
