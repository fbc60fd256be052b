"""Oracle: README.md itself: each ```python block runs alone and prints what the README shows.

Every block runs as written in a fresh interpreter (no names carried over from another
block).  Where the README shows the output (a plain block right after, or a ``# comment``
after the last ``print``), the printed text must match it: words and integers exactly,
other numbers (times, rates) loosely.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from convgrad.ops import onednn_available

README = Path(__file__).resolve().parent.parent / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


def _blocks() -> list[tuple[str, str, str | None]]:
    """(heading, code, the output shown after it or None) for each python block."""
    text = README.read_text()
    fences = list(FENCE.finditer(text))
    found = []
    for i, m in enumerate(fences):
        if m.group(1) != "python":
            continue
        headings = re.findall(r"^#+ (.+)$", text[:m.start()], re.M)
        after = fences[i + 1] if i + 1 < len(fences) else None
        shown = after.group(2) if after and after.group(1) == "" and after.start() == m.end() \
            else None
        found.append((headings[-1] if headings else "top", m.group(2), shown))
    return found


BLOCKS = _blocks()


def _run(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300, cwd=README.parent)


def _tokens(text: str) -> list[str]:
    """Words and integers as they are; every other number as "<number>"; oneDNN's
    implementation names (which depend on the CPU) as "onednn:<impl>"."""
    out = []
    for tok in text.split():
        if tok.startswith("onednn:"):
            out.append("onednn:<impl>")
        elif re.fullmatch(r"[-+]?\d+", tok):
            out.append(tok)
        elif re.fullmatch(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?", tok):
            out.append("<number>")
        else:
            out.append(tok)
    return out


def test_the_readme_has_its_snippets():
    headings = [h for h, _, _ in BLOCKS]
    assert "A conv layer trained in five lines" in headings
    assert "A transposed convolution" in headings
    assert any(shown for _, _, shown in BLOCKS)  # the profiler table is compared


@pytest.mark.parametrize("heading,code,shown", BLOCKS, ids=[h for h, _, _ in BLOCKS])
def test_snippet_runs_alone_and_prints_what_the_readme_shows(heading, code, shown):
    result = _run(code)
    assert result.returncode == 0, f"{heading}:\n{result.stderr}"
    printed = result.stdout
    if shown is not None:
        if "direct" in shown and importlib.util.find_spec("numba") is None:
            return  # the table names the Numba loops; without Numba it ran, that is all
        if "onednn:" in shown and not onednn_available():
            return  # the table names oneDNN; without it the NumPy engine ran, that is all
        assert _tokens(printed) == _tokens(shown), f"{heading}: printed\n{printed}"
    last = code.rstrip().splitlines()[-1]
    comment = last.split("#", 1)[1].strip() if last.startswith("print(") and "#" in last \
        else None
    if comment and not comment.startswith("~"):
        assert printed.strip() == comment, heading


def test_the_trained_layer_learns_the_blur():
    """The first snippet's comment: loss ~1e-11 and every tap 0.111 (the 1/9 blur)."""
    (code,) = [c for h, c, _ in BLOCKS if h == "A conv layer trained in five lines"]
    assert "# ~1e-11, every tap 0.111" in code
    printed = _run(code).stdout.split()
    assert float(printed[0]) < 1e-8
    taps = [float(t.strip("[]")) for t in printed[1:] if t.strip("[]")]
    assert taps == [0.111] * 9
