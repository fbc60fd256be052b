"""Oracle: central finite differences in float64 (and deliberately wrong rules it must catch)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import convgrad as cg
import convgrad.cli.gradcheck as gradcheck_module
from convgrad.autograd import Function
from convgrad.cli.gradcheck import run
from convgrad.testing import check, gradcheck, gradgradcheck


def leaf(*shape: int) -> cg.Tensor:
    return cg.tensor(np.random.default_rng(3).standard_normal(shape), requires_grad=True,
                     dtype=np.float64)


class WrongGrad(Function):
    reads = (0,)
    """sin(x) with the derivative of -cos: a first-order bug."""

    @staticmethod
    def forward(ctx, x):
        return np.sin(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * np.sin(ctx.inputs[0].data)


class ConstantRule(Function):
    reads = (0,)
    """x^3 whose rule uses a constant 3 x^2: right first order, wrong second order."""

    @staticmethod
    def forward(ctx, x):
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        return grad * (3 * ctx.inputs[0].data ** 2)


def test_correct_gradients_pass():
    x, w = leaf(2, 3), leaf(3, 2)
    assert gradcheck(lambda a, b: (a @ b).tanh(), [x, w])
    assert gradgradcheck(lambda a, b: (a @ b).tanh(), [x, w])
    res = check(lambda a: (a * a).exp(), [x])
    assert res.passed and res.max_abs < 1e-6 and res.max_rel < 1e-6


def test_wrong_first_order_is_caught():
    res = check(WrongGrad.apply, [leaf(4)])
    assert not res.passed and res.max_abs > 0.1
    assert not gradcheck(WrongGrad.apply, [leaf(4)])


def test_wrong_second_order_is_caught():
    assert gradcheck(ConstantRule.apply, [leaf(4)])
    assert not gradgradcheck(ConstantRule.apply, [leaf(4)])


def test_only_inputs_requiring_grad_are_checked():
    x, c = leaf(3), cg.tensor(np.ones(3), dtype=np.float64)
    assert gradcheck(lambda a, b: a * b + b, [x, c])
    with pytest.raises(ValueError, match="requires grad"):
        check(lambda b: b * 2, [c])
    with pytest.raises(ValueError, match="order"):
        check(lambda a: a, [x], order=3)


def test_check_leaves_inputs_unchanged():
    x = leaf(2, 2)
    before = x.data.copy()
    check(lambda a: a.exp(), [x], order=2)
    assert np.array_equal(x.data, before) and x.grad is None


def test_quick_sweep_passes_and_prints_a_table():
    out = io.StringIO()
    assert run(quick=True, out=out) == 0
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["op", "config"] and "max abs err" in lines[0]
    for op in ("matmul", "getitem", "pad", "max_pool2d", "avg_pool2d", "cross_entropy",
               "softmax", "pow", "max"):
        assert any(line.startswith(op + " ") and line.endswith("PASS") for line in lines), op
    assert "FAIL" not in text and lines[-1].endswith(" s")


def test_full_sweep_of_the_core_ops_passes(monkeypatch):
    monkeypatch.setattr(gradcheck_module, "_conv_cases", lambda rng, quick: [])  # in the quick one
    out = io.StringIO()
    assert run(quick=False, out=out) == 0, out.getvalue()
    assert out.getvalue().count("PASS") > 70


def test_a_crashing_case_is_a_failure(monkeypatch):
    def broken(rng, quick):
        return [gradcheck_module.Case("broken", "", lambda a: a.nonexistent(), (leaf(2),))]

    monkeypatch.setattr(gradcheck_module, "_core_cases", broken)
    monkeypatch.setattr(gradcheck_module, "_conv_cases", lambda rng, quick: [])
    out = io.StringIO()
    assert run(quick=True, out=out) == 1
    assert "FAIL (AttributeError" in out.getvalue()
