"""Oracle: the package's own source, parsed (``ast``): every import statement, at module
level or deferred inside a function, is an edge of the import graph.

The graph has no circle (a deferred import that closes one only hides it), and the
layers import downwards only: the autodiff engine knows no operation and no layer above
it, and the kernels (``convgrad.ops``) know no Tensor.
"""

from __future__ import annotations

import ast
from pathlib import Path

import convgrad

ROOT = Path(convgrad.__path__[0])


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


MODULES = _modules()


def _edges(name: str) -> set[str]:
    path, is_package = MODULES[name]
    here = name.split(".") if is_package else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "convgrad"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "convgrad":
                continue
            for a in node.names:  # ``from pkg import module`` imports the module
                found.add(f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {m: _edges(m) for m in MODULES}


def _circles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for start in sorted(GRAPH):
        if start in index:
            continue
        work = [(start, iter(sorted(GRAPH[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(GRAPH[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_the_graph_sees_the_layers():
    assert "convgrad.tensor.tensor" in GRAPH["convgrad.tensor"]
    assert "convgrad.autograd.function" in GRAPH["convgrad.autograd.engine"]


def test_no_import_circle():
    assert _circles() == []


def _imports_of(package: str) -> set[str]:
    return {t for m, ts in GRAPH.items() if m == package or m.startswith(package + ".")
            for t in ts}


def test_the_engine_imports_nothing_above_it():
    outside = {t for t in _imports_of("convgrad.autograd")
               if not t.startswith("convgrad.autograd")}
    assert outside <= {"convgrad.arraytypes"}, outside


def test_the_kernels_know_no_tensor():
    above = ("convgrad.tensor", "convgrad.autograd", "convgrad.functional", "convgrad.nn",
             "convgrad.optim", "convgrad.metrics", "convgrad.cli")
    bad = {t for t in _imports_of("convgrad.ops") if t.startswith(above)}
    assert not bad, bad
