"""``convgrad gradcheck``: finite differences in float64 for every operation, over a sweep.

One row per operation and configuration (:func:`convgrad.testing.check` does the
comparison); ``--quick`` checks 12 random elements per input of a smaller sweep.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple, TextIO

import numpy as np

from ..tensor import Tensor, concatenate, stack, tensor, where
from ..testing import check


class Case(NamedTuple):
    op: str
    config: str
    func: Callable[..., Tensor]
    inputs: tuple
    order: int = 1


def _rand(rng: np.random.Generator, *shape: int, grad: bool = True, away: float = 0.0
          ) -> Tensor:
    """float64 normal samples; ``away`` keeps every value at least that far from zero."""
    x = rng.standard_normal(shape)
    x = np.where(np.abs(x) < away, np.sign(x + 1e-12) * (away + np.abs(x)), x)
    return tensor(x, requires_grad=grad, dtype=np.float64)


def _distinct(rng: np.random.Generator, *shape: int) -> Tensor:
    """float64 values all at least 0.01 apart (no ties within finite-difference reach)."""
    x = rng.permutation(int(np.prod(shape))).reshape(shape) * 0.01 - 0.3
    return tensor(x, requires_grad=True, dtype=np.float64)


def _core_cases(rng: np.random.Generator, quick: bool) -> list[Case]:
    from convgrad import functional as F  # noqa: N812

    r = lambda *s, **k: _rand(rng, *s, **k)
    pos = lambda *s: tensor(rng.uniform(0.5, 2.0, s), requires_grad=True, dtype=np.float64)
    fancy = (np.array([0, 2, 0, 1]), slice(None), np.array([1, 1, 3, 3]))
    mask = rng.random((3, 4)) > 0.4
    cases = [
        Case("add", "broadcast (3,1,4)+(2,4)", lambda a, b: a + b, (r(3, 1, 4), r(2, 4))),
        Case("sub", "broadcast (2,4)-(4,)", lambda a, b: a - b, (r(2, 4), r(4))),
        Case("mul", "broadcast (3,1)*(1,4)", lambda a, b: a * b, (r(3, 1), r(1, 4))),
        Case("div", "broadcast (2,3)/(3,)", lambda a, b: a / b, (r(2, 3), r(3, away=0.5))),
        Case("pow", "tensor ** tensor", lambda a, b: a ** b, (pos(2, 3), r(2, 3))),
        Case("pow", "tensor ** 3", lambda a: a ** 3, (r(2, 3),)),
        Case("pow", "2.5 ** tensor", lambda b: 2.5 ** b, (r(2, 3),)),
        Case("neg", "", lambda a: -a, (r(4),)),
        Case("exp", "", lambda a: a.exp(), (r(2, 3),)),
        Case("log", "", lambda a: a.log(), (pos(2, 3),)),
        Case("sqrt", "", lambda a: a.sqrt(), (pos(2, 3),)),
        Case("abs", "", lambda a: a.abs(), (r(2, 3, away=0.1),)),
        Case("clip", "min=-0.5 max=0.5", lambda a: a.clip(-0.5, 0.5), (_distinct(rng, 3, 4),)),
        Case("relu", "", F.relu, (r(3, 4, away=0.1),)),
        Case("leaky_relu", "slope=0.2", lambda a: F.leaky_relu(a, 0.2), (r(3, 4, away=0.1),)),
        Case("sigmoid", "", F.sigmoid, (r(3, 4),)),
        Case("tanh", "", F.tanh, (r(3, 4),)),
        Case("softmax", "dim=1", lambda a: F.softmax(a, 1), (r(2, 5, 3),)),
        Case("log_softmax", "dim=-1", lambda a: F.log_softmax(a, -1), (r(2, 5),)),
        Case("sum", "dim=(0,2) keepdim", lambda a: a.sum((0, 2), keepdim=True), (r(2, 3, 4),)),
        Case("mean", "dim=1", lambda a: a.mean(1), (r(2, 3, 4),)),
        Case("max", "all", lambda a: a.max(), (_distinct(rng, 3, 4),)),
        Case("max", "dim=1", lambda a: a.max(dim=1).values, (_distinct(rng, 3, 4),)),
        Case("min", "dim=(0,1) keepdim", lambda a: a.min((0, 1), keepdim=True),
             (_distinct(rng, 3, 4, 2),)),
        Case("reshape", "(2,3,4)->(4,-1)", lambda a: a.reshape(4, -1), (r(2, 3, 4),)),
        Case("permute", "(2,0,1)", lambda a: a.permute(2, 0, 1), (r(2, 3, 4),)),
        Case("expand", "(3,1)->(2,3,4)", lambda a: a.expand(2, 3, 4), (r(3, 1),)),
        Case("getitem", "basic [1:, ::2, None, -1]", lambda a: a[1:, ::2, None, -1],
             (r(3, 4, 5),)),
        Case("getitem", "fancy, repeated indices", lambda a: a[fancy], (r(3, 2, 4),)),
        Case("getitem", "bool mask", lambda a: a[mask], (r(3, 4),)),
        Case("concatenate", "dim=1", lambda a, b: concatenate([a, b], dim=1),
             (r(2, 3), r(2, 2))),
        Case("stack", "dim=-1", lambda a, b: stack([a, b], dim=-1), (r(2, 3), r(2, 3))),
        Case("where", "broadcast", lambda a, b: where(mask, a, b), (r(3, 4), r(4))),
        Case("matmul", "(2,3)@(3,4)", lambda a, b: a @ b, (r(2, 3), r(3, 4))),
        Case("matmul", "batched (2,1,3,4)@(3,4,2)", lambda a, b: a @ b,
             (r(2, 1, 3, 4), r(3, 4, 2))),
        Case("matmul", "(3,)@(2,3,4) and (3,)@(3,)", lambda a, b, c: (a @ b).sum() + a @ c,
             (r(3), r(2, 3, 4), r(3))),
        Case("mse_loss", "mean", F.mse_loss, (r(3, 4), r(3, 4))),
        Case("l1_loss", "sum", lambda a, b: F.l1_loss(a, b, reduction="sum"),
             (r(3, 4), r(3, 4, grad=False) + 5.0)),
        Case("cross_entropy", "(N,C)", lambda a: F.cross_entropy(a, np.array([1, 0, 3])),
             (r(3, 4),)),
        Case("cross_entropy", "(N,C,H) none", lambda a: F.cross_entropy(
            a, np.array([[1, 0], [2, 2]]), reduction="none"), (r(2, 3, 2),)),
    ]
    for mode in ("constant", "reflect", "replicate", "circular"):
        cases.append(Case("pad", f"{mode} (2,1,-1,2)",
                          lambda a, m=mode: F.pad(a, (2, 1, -1, 2), mode=m), (r(1, 2, 4, 3),)))
    cases += [
        Case("avg_pool2d", "k=3 s=2 p=1", lambda a: F.avg_pool2d(a, 3, 2, 1), (r(1, 2, 5, 6),)),
        Case("avg_pool2d", "k=(2,3) s=1", lambda a: F.avg_pool2d(a, (2, 3), 1), (r(2, 4, 5),)),
        Case("max_pool2d", "k=2", lambda a: F.max_pool2d(a, 2), (_distinct(rng, 1, 2, 4, 4),)),
        Case("max_pool2d", "k=3 s=2 p=1", lambda a: F.max_pool2d(a, 3, 2, 1),
             (_distinct(rng, 1, 2, 5, 5),)),
    ]
    second = ["mul", "div", "pow", "exp", "log", "sqrt", "sigmoid", "tanh", "softmax",
              "log_softmax", "getitem", "matmul", "pad", "avg_pool2d", "max_pool2d",
              "cross_entropy", "where", "max"]
    if quick:
        second = second[::2]
    return cases + [_second_order(c) for c in cases if c.op in second]


def _second_order(case: Case) -> Case:
    """Check y^3 to order 2: a linear op's own second derivative would be zero."""
    func = case.func
    return case._replace(func=lambda *a: func(*a) ** 3, config=f"{case.config} y^3".strip(),
                         order=2)


def _conv_cases(rng: np.random.Generator, quick: bool) -> list[Case]:
    """A sweep over stride, padding, dilation and groups (empty until the convs import)."""
    try:
        from convgrad.functional import (
            conv1d,
            conv2d,
            conv3d,
            conv_general,
            conv_transpose2d,
        )
    except ImportError:
        return []
    r = lambda *s: _rand(rng, *s)
    cases = []
    configs = [(2, 1, 1, 2), (1, "same", 2, 2), (1, 0, 1, 1), (1, 2, 2, 1), (2, 1, 1, 1)]
    for stride, padding, dilation, groups in configs[:2] if quick else configs:
        cases.append(Case("conv2d", f"s={stride} p={padding} d={dilation} g={groups}",
                          lambda x, w, b, s=stride, p=padding, d=dilation, g=groups:
                          conv2d(x, w, b, s, p, d, g),
                          (r(2, 2, 5, 4), r(4, 2 // groups, 3, 2), r(4))))
    tconfigs = [(2, 0, 1, 2, 1), (2, 1, 1, 1, 1), (3, 1, 2, 1, 2)]
    for stride, padding, out_pad, groups, dilation in tconfigs[:1] if quick else tconfigs:
        cases.append(Case("conv_transpose2d",
                          f"s={stride} p={padding} op={out_pad} g={groups} d={dilation}",
                          lambda x, w, b, s=stride, p=padding, o=out_pad, g=groups, d=dilation:
                          conv_transpose2d(x, w, b, s, p, o, g, d),
                          (r(1, 2, 3, 3), r(2, 4 // groups, 3, 2), r(4))))
    cases += [
        Case("conv_general", "input_dilation=2 flip pad=((1,2),(0,1))",
             lambda x, w: conv_general(x, w, stride=1, padding=((1, 2), (0, 1)),
                                       input_dilation=2, flip=True),
             (r(1, 2, 3, 3), r(2, 2, 2, 3))),
        Case("conv1d", "s=2 p=2 d=2", lambda x, w, b: conv1d(x, w, b, 2, 2, 2),
             (r(2, 2, 9), r(3, 2, 3), r(3))),
    ]
    if not quick:
        cases += [
            Case("conv3d", "s=1 p=1 g=2", lambda x, w: conv3d(x, w, None, 1, 1, 1, 2),
                 (r(1, 2, 3, 4, 3), r(2, 1, 2, 2, 2))),
            Case("conv1d", "padding_mode=reflect", lambda x, w: conv1d(
                x, w, padding=2, padding_mode="reflect"), (r(1, 2, 7), r(3, 2, 3))),
        ]
    second = [cases[0], cases[3]] if quick else cases  # conv2d and conv_general
    return cases + [_second_order(c) for c in second]


def run(quick: bool = False, out: TextIO = sys.stdout) -> int:
    """Check every operation (and the convolutions, when present); 0 if all pass, else 1."""
    rng = np.random.default_rng(20240611)
    cases = _core_cases(rng, quick) + _conv_cases(rng, quick)
    head = f"{'op':<18} {'config':<40} {'order':>5} {'max abs err':>12} {'max rel err':>12}  result"
    print(head, file=out)
    print("-" * len(head), file=out)
    failures, start = 0, time.perf_counter()
    for case in cases:
        try:
            res = check(case.func, case.inputs, order=case.order,
                        max_elements=12 if quick else None)
            cells = f"{res.max_abs:>12.2e} {res.max_rel:>12.2e}  {'PASS' if res.passed else 'FAIL'}"
            failures += not res.passed
        except Exception as e:  # a crash is a failure, reported in the table
            cells = f"{'-':>12} {'-':>12}  FAIL ({type(e).__name__}: {e})"
            failures += 1
        print(f"{case.op:<18} {case.config:<40} {case.order:>5} {cells}", file=out)
    print(f"{len(cases) - failures}/{len(cases)} passed in {time.perf_counter() - start:.1f} s",
          file=out)
    return 0 if failures == 0 else 1


def main(argv: Sequence[str] | None = None) -> int:
    from .help_format import DefaultsHelpFormatter

    parser = argparse.ArgumentParser(prog="convgrad gradcheck", description=__doc__.split("\n")[0],
                                     formatter_class=DefaultsHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="the small sweep, 12 random elements per input (< 10 s)")
    return run(quick=parser.parse_args(argv).quick)


if __name__ == "__main__":
    sys.exit(main())
