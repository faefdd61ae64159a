"""Seeds for kiln-serve's fuzz target (tests/fuzz/serve_fuzz.cpp): predict bodies in both
formats, with base64 strings, scalars, bad JSON and deep nesting, gRPC PredictRequest
messages (encoded here by hand: tensor_content, typed values, strings, filters, a huge
declared shape), and URL paths; each file is the selector byte of serve_body.h, then the
bytes. Stdlib only.

    python3 tests/fuzz/make_serve_seeds.py DIR
"""
import hashlib
import json
import os
import struct
import sys

BODIES = [
    {"instances": [[1, 2], [3, 4.5]]},
    {"instances": [{"x": [1, 2], "s": {"b64": "aGk="}, "i": [1, 2, 3]}]},
    {"inputs": {"x": [[1, 2]], "s": ["a", "b"], "i": [[1, 2, 3]]}},
    {"inputs": [[0.5, -1e30]]},
    {"signature_name": "serving_default", "instances": [[1e-45, 3.4e38]]},
    {"inputs": {"x": [[1, 2]], "s": [{"b64": "!!notbase64"}], "i": [[9223372036854775807, 0, -1]]}},
    {"instances": [[1, 2], [3]]},
    {"instances": []},
    {"instances": [[1, "two"]]},
    {"inputs": {"z": [[1, 2]]}},
]
RAW = ['{"instances": ' + "[" * 80 + "]" * 80 + "}", "{not json", "", "null", '{"inputs": 1}',
       '{"instances": [[1, 2]], "inputs": [[1, 2]]}', '{"instances": [[NaN, Infinity]]}']
PATHS = ["/v1/models/m", "/v1/models/m/metadata", "/v1/models/m:predict",
         "/v1/models/m/versions/2:predict", "/v1/models/m/labels/stable:classify",
         "/v1/models/m/versions/99999999999999999999999", "/monitoring/prometheus/metrics",
         "/v1/models/%2e%2e/versions/-1", "/v1/models//:predict"]


def varint(v):
    v &= (1 << 64) - 1
    out = b""
    while True:
        out += bytes([(v & 0x7F) | (0x80 if v > 0x7F else 0)])
        v >>= 7
        if not v:
            return out


def field(number, value):
    """A protobuf field: an int as a varint, bytes/str length-delimited."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    value = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(value)) + value


def tensor(dtype, dims, content=None, floats=(), strings=(), int64s=()):
    t = field(1, dtype) + field(2, b"".join(field(2, field(1, d)) for d in dims))
    if content is not None:
        t += field(4, content)
    if floats:
        t += field(5, b"".join(struct.pack("<f", f) for f in floats))
    if int64s:
        t += field(10, b"".join(varint(i) for i in int64s))
    return t + b"".join(field(8, x) for x in strings)


def predict_request(inputs, name="m", signature="", version=None, filters=()):
    spec = field(1, name) + (field(3, signature) if signature else b"")
    if version is not None:
        spec += field(2, field(1, version))
    msg = field(1, spec)
    for k, t in inputs.items():
        msg += field(2, field(1, k) + field(2, t))
    return msg + b"".join(field(3, f) for f in filters)


X = tensor(1, [2, 2], content=struct.pack("<4f", 1, 2, 3, 4))  # DT_FLOAT
GRPC = [
    predict_request({"x": X}),
    predict_request({"x": tensor(1, [1, 2], floats=[0.5])}, version=3, filters=["x"]),
    predict_request({"x": X, "s": tensor(7, [2], strings=[b"a", b"\xff\x00"]),
                     "i": tensor(9, [1, 3], int64s=[1, -1, 2**63 - 1])}, signature="sig"),
    predict_request({"x": tensor(1, [1 << 40, 2], floats=[1.0])}),  # huge declared shape
    predict_request({"x": tensor(9, [2, 2], content=b"\0" * 32)}),  # wrong dtype
    predict_request({"x": tensor(1, [-1, 2], content=b"")}, filters=["y", "y"]),
    predict_request({"x": tensor(10, [3], content=b"\x00\x01\x02")}),  # bool byte 2
]


def seeds():
    for g in GRPC:
        yield b"\x06" + g
        yield b"\x04" + g
    for b in BODIES:
        text = json.dumps(b).encode()
        yield b"\x02" + text
        yield b"\x00" + text
    for r in RAW:
        yield b"\x02" + r.encode()
    for p in PATHS:
        yield b"\x01" + p.encode()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for s in seeds():
        with open(os.path.join(out, hashlib.sha1(s).hexdigest()), "wb") as f:
            f.write(s)


if __name__ == "__main__":
    main()
