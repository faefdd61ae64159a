"""Seeds for kiln-serve's fuzz target (tests/fuzz/serve_fuzz.cpp): predict bodies in both
formats, with base64 strings, scalars, bad JSON and deep nesting, and URL paths; each file
is the selector byte of serve_body.h, then the bytes. Stdlib only.

    python3 tests/fuzz/make_serve_seeds.py DIR
"""
import hashlib
import json
import os
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


def seeds():
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
