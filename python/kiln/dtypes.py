"""Element types (tf.dtypes): kiln.float32, kiln.int32, ..."""
from kiln import _kiln
from kiln._composite import CompositeTensor

DType = _kiln.DType
as_dtype = _kiln.as_dtype

bool = _kiln.as_dtype("bool")  # noqa: A001
int8 = _kiln.as_dtype("int8")
uint8 = _kiln.as_dtype("uint8")
int32 = _kiln.as_dtype("int32")
int64 = _kiln.as_dtype("int64")
float32 = _kiln.as_dtype("float32")
float64 = _kiln.as_dtype("float64")
float16 = _kiln.as_dtype("float16")
bfloat16 = _kiln.as_dtype("bfloat16")
half = float16
complex64 = _kiln.as_dtype("complex64")
complex128 = _kiln.as_dtype("complex128")
string = _kiln.as_dtype("string")
double = float64


def cast(x, dtype, name=None):
    """x converted to dtype (tf.cast / tf.dtypes.cast)."""
    dtype = _kiln.as_dtype(dtype)
    if not isinstance(x, (_kiln.Tensor, _kiln.Variable)):
        if isinstance(x, CompositeTensor):  # RaggedTensor, SparseTensor: cast the values
            return x._map_values(lambda v: cast(v, dtype))
        x = _kiln.convert_to_tensor(x)
    if x.dtype == dtype:
        return x if isinstance(x, _kiln.Tensor) else x.read_value()
    return _kiln.raw.Cast(x, DstT=dtype)


__all__ = ["DType", "as_dtype", "bool", "int8", "uint8", "int32", "int64", "float32",
           "float64", "float16", "bfloat16", "half", "complex64", "complex128", "string", "double",
           "cast"]
