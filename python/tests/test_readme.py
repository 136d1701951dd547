"""The README's Python example is python/examples/readme_example.py, and it runs as written."""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "python" / "examples" / "readme_example.py"


def readme_example():
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return block


def test_readme_example_is_the_file():
    assert readme_example() == EXAMPLE.read_text()


def test_readme_example_runs():
    r = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=True)
    assert r.stdout.split() == "[[0. 0. 0. 3.] [0. 0. 0. 3.]]".split()
