"""Oracle: the repository's own files and the packages' ``__all__`` lists.

The docs stand on their own: nothing in the project points at a file outside the
repository, every relative link in the Markdown files resolves, and docs/API.md names
every public name of every package.
"""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs" / "API.md"
PACKAGES = ("convgrad", "convgrad.autograd", "convgrad.functional", "convgrad.ops",
            "convgrad.nn", "convgrad.nn.init", "convgrad.nn.utils", "convgrad.optim",
            "convgrad.optim.lr_scheduler", "convgrad.utils", "convgrad.utils.data",
            "convgrad.metrics", "convgrad.serialization", "convgrad.testing")


def _project_files() -> list[Path]:
    """Every text file of the project that git knows (tracked or new, not ignored)."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                                cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    files = [ROOT / name for name in listed.splitlines()]
    return [f for f in files if f.suffix in (".py", ".md", ".toml", ".txt", ".cfg")
            and f.is_file() and f != Path(__file__).resolve()]


def test_nothing_points_outside_the_repository():
    outside = [
        re.compile(r"(?<![\w/])API\.md"),       # the API document is docs/API.md
        re.compile(r"BENCHMARKS\.md"),           # the workloads live in the bench package
        re.compile(r"(?<![\w.])shared/|\.\./shared"),
        re.compile(r"/work/"),                   # no absolute paths of a build machine
    ]
    found = []
    for f in _project_files():
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            if any(p.search(line) for p in outside):
                found.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []


def test_relative_markdown_links_resolve():
    broken = []
    for f in _project_files():
        if f.suffix != ".md":
            continue
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", f.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (f.parent / target).exists():
                broken.append(f"{f.relative_to(ROOT)} -> {target}")
    assert broken == []


@pytest.mark.parametrize("package", PACKAGES)
def test_api_md_names_every_public_name(package):
    text = API.read_text()
    names = importlib.import_module(package).__all__
    assert names, package
    missing = [n for n in names if not re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", text)]
    assert missing == [], f"{package}: not in docs/API.md: {missing}"
