#!/usr/bin/env python3
"""Fetch the 8x8 handwritten digits (1797 images, 10 classes) for the `train` example.

The data set ships inside scikit-learn's wheel (`sklearn/datasets/data/digits.csv.gz`, the UCI
optical-digits test set). This script downloads the wheel `scikit-learn==1.5.2` (about 13 MB)
with `python3 -m pip download --no-deps --only-binary=:all:`, reads that one member, and writes
`digits.csv` (64 pixel values 0..16 then the label, one image a line) into the cache directory
after checking its full SHA-256. scikit-learn itself is not installed; nothing is committed.

Cache directory: `$HIPDNN_DIGITS_DIR` when set, else `target/digits/` under the repository root.
A `digits.csv` already present with the pinned hash is kept (no download). Exit status: 0 when
the file is in place and verified; 1 on a download, archive or hash failure (the reason is on
stderr; a file with a wrong hash is not written).

Usage: python3 hipdnn-rs/examples/train/fetch_digits.py
"""

import gzip
import hashlib
import os
import pathlib
import subprocess
import sys
import tempfile
import zipfile

PACKAGE = "scikit-learn==1.5.2"
MEMBER = "sklearn/datasets/data/digits.csv.gz"
# SHA-256 of the decompressed CSV (the same in every platform's wheel of this version).
CSV_SHA256 = "6ebb3d2fee246a4e99363262ddf8a00a3c41bee6014c373ed9d9216ba7f651b8"


def cache_dir() -> pathlib.Path:
    env = os.environ.get("HIPDNN_DIGITS_DIR")
    if env:
        return pathlib.Path(env)
    return pathlib.Path(__file__).resolve().parents[3] / "target" / "digits"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> int:
    out = cache_dir() / "digits.csv"
    if out.is_file() and sha256(out.read_bytes()) == CSV_SHA256:
        print(f"{out}: present, SHA-256 verified")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "-d", tmp, PACKAGE]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wheels = list(pathlib.Path(tmp).glob("scikit_learn-*.whl"))
        if r.returncode != 0 or not wheels:
            print(f"fetch_digits: `{' '.join(cmd)}` failed:\n{r.stdout}", file=sys.stderr)
            return 1
        try:
            with zipfile.ZipFile(wheels[0]) as z:
                data = gzip.decompress(z.read(MEMBER))
        except (KeyError, zipfile.BadZipFile, OSError, EOFError) as e:
            print(f"fetch_digits: {wheels[0].name}: cannot read {MEMBER}: {e}", file=sys.stderr)
            return 1
    got = sha256(data)
    if got != CSV_SHA256:
        print(f"fetch_digits: {MEMBER}: SHA-256 {got}, expected {CSV_SHA256}", file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".csv.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, out)
    print(f"{out}: written, SHA-256 verified ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
