"""A decoders_fuzz input (selector 8: the TFRecord reader): a ~3.5 MB GZIP file
whose one record header claims N bytes (with a valid header CRC), then N zero
bytes. RecordReader inflates the whole record into one std::string, so reading
the 3.5 MB file allocates more than 4 GB (libFuzzer: out-of-memory
(malloc(4294967297)) under -rss_limit_mb=4096). Not checked in as bytes (size).

    python3 tests/fuzz/decoders_crashes/make_gzip_bomb.py OUT [N]
    build-fuzz/decoders_fuzz -rss_limit_mb=4096 OUT
"""
import os
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from make_decoder_seeds import tfrecord_header  # noqa: E402

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 3500 << 20
z = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a GZIP stream
parts = [z.compress(tfrecord_header(n))]
zeros = bytes(1 << 24)
left = n
while left > 0:
    parts.append(z.compress(zeros[: min(left, len(zeros))]))
    left -= len(zeros)
parts.append(z.flush())
with open(out, "wb") as f:
    f.write(bytes([8]) + b"".join(parts))
