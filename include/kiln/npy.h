// NumPy's .npy files (format versions 1-3, little-endian, C order): the
// simplest way to move tensors between Python and a C++ server.
#pragma once
#include <string>

#include "kiln/tensor.h"

namespace kiln::npy {

/// Parses .npy bytes. bool, int8, uint8, int32, int64, float16, float32,
/// float64, complex64 and complex128 arrays, and fixed-width byte strings
/// (`|S<n>`, trailing NULs dropped as NumPy does) as string tensors; anything
/// else (object arrays: no pickle), a Fortran-order array or a damaged file
/// is an InvalidArgumentError naming `where`.
Tensor parse(const std::string& bytes, const std::string& where = "npy");
/// Reads a .npy file (NotFoundError when missing).
Tensor read(const std::string& path);
/// The .npy bytes (format 1.0) of a concrete tensor of a dtype above
/// (strings as `|S<longest>`).
std::string serialize(const Tensor& t);
/// Writes a .npy file.
void write(const std::string& path, const Tensor& t);

}  // namespace kiln::npy
