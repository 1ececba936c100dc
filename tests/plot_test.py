#!/usr/bin/env python3
"""Renders every figure of scripts/plot.py from the committed CSVs in
tests/data/plot/ (made by the commands in tests/data/README.md) and checks that
each PNG was written and is a valid PNG: the signature, a well-formed IHDR with a
non-zero size, every chunk's CRC, and a final IEND.

Exit 0 when every figure is valid, 1 otherwise, 77 (ctest: skipped) when
matplotlib is missing, so a machine without it never reports a pass.
"""
import os
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CSVS = [os.path.join(HERE, "data", "plot", n) for n in ("smoke.csv", "blocks.csv")]
FIGURES = ["tflops.png", "latency.png", "traffic.png", "memory.png", "error.png", "blocks.png"]
SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_problem(path):
    """'' when `path` is a complete, valid PNG, else what is wrong with it."""
    if not os.path.isfile(path):
        return "not written"
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(SIGNATURE):
        return "no PNG signature"
    pos, chunks = len(SIGNATURE), []
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if len(body) != length or pos + 12 + length > len(data):
            return f"chunk {kind!r} truncated"
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            return f"chunk {kind!r} has a bad CRC"
        chunks.append((kind, body))
        pos += 12 + length
        if kind == b"IEND":
            break
    if not chunks or chunks[0][0] != b"IHDR" or len(chunks[0][1]) != 13:
        return "first chunk is not a 13-byte IHDR"
    width, height = struct.unpack(">II", chunks[0][1][:8])
    if width == 0 or height == 0:
        return f"empty image {width}x{height}"
    if not any(k == b"IDAT" for k, _ in chunks):
        return "no image data (IDAT)"
    if chunks[-1][0] != b"IEND":
        return "no IEND chunk: the file is cut short"
    return ""


def main():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"SKIP: matplotlib is not importable by {sys.executable} "
              "(Debian: apt-get install python3-matplotlib); no figure was checked")
        return 77
    for c in CSVS:
        if not os.path.isfile(c):
            print(f"FAIL: committed CSV {c} is missing")
            return 1
    with tempfile.TemporaryDirectory(prefix="fa_plot_test_") as out:
        run = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "plot.py"), *CSVS, "--out", out],
                             capture_output=True, text=True)
        print(run.stdout + run.stderr, end="")
        if run.returncode != 0:
            print(f"FAIL: plot.py exited {run.returncode}")
            return 1
        failed = 0
        for name in FIGURES:
            why = png_problem(os.path.join(out, name))
            print(f"{name}: {'ok' if not why else 'FAIL: ' + why}")
            failed += bool(why)
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
