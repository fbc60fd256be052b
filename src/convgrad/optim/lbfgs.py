"""L-BFGS with torch's arguments and iterates: the two-loop recursion over the last
``history_size`` steps (Nocedal and Wright, Algorithm 7.4), and optionally a line search
satisfying the strong Wolfe conditions (their Algorithms 3.5 and 3.6, cubic
interpolation); every choice that moves an iterate (the first step's length, the
curvature test ``y.s > 1e-10``, the stopping tests, the interpolation's safeguards) is
torch's, so a float64 run retraces torch's.

The parameters are one flat vector of their dtype: gradients are gathered into it
(zeros where a parameter has none) and steps scattered back in place.  The whole state
(search direction, step, history, counters) lives in ``state[first parameter]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Integral
from typing import Any

import numpy as np

from ..autograd import enable_grad
from ..tensor import Tensor
from ..tensor.version import bump as _bump_version
from .optimizer import Optimizer, _cast_state, _number

__all__ = ["LBFGS"]

# the strong Wolfe conditions' constants: sufficient decrease c1, curvature c2; the zoom
# stops at an interval this short (times the direction's largest entry), whatever the
# group's tolerance_change (as torch's line search)
C1, C2, ZOOM_TOLERANCE = 1e-4, 0.9, 1e-9


def cubic_minimum(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                  bounds: tuple | None = None) -> float:
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2,
    clamped to ``bounds`` (default: between x1 and x2); their midpoint where the cubic
    has no minimum (Nocedal and Wright, eq. 3.59)."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, lo), hi)


def strong_wolfe(evaluate: Callable[[float], tuple], t: float, d: np.ndarray, f: float,
                 g: np.ndarray, gtd: float, most: int) -> tuple:
    """A step ``t`` along ``d`` from loss ``f``, gradient ``g`` (slope ``gtd``) meeting the
    strong Wolfe conditions, by bracketing then zooming, in about ``most`` evaluations
    (the budget :class:`LBFGS` has left; one more where the first does not count);
    ``evaluate(t)`` returns (loss, flat gradient) there.  Returns (loss, gradient, t,
    evaluations)."""
    d_norm = float(np.abs(d).max())
    f_new, g_new = evaluate(t)
    evals, it = 1, 0
    gtd_new = float(g_new.dot(d))
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    while it < most:  # bracket: grow t until the interval holds a good step
        if f_new > f + C1 * t * gtd or (it > 1 and f_new >= f_prev):
            bracket = [[t_prev, f_prev, g_prev, gtd_prev], [t, f_new, g_new, gtd_new]]
            break
        if abs(gtd_new) <= -C2 * gtd:
            bracket, done = [[t, f_new, g_new, gtd_new]], True
            break
        if gtd_new >= 0:  # past a minimum
            bracket = [[t_prev, f_prev, g_prev, gtd_prev], [t, f_new, g_new, gtd_new]]
            break
        low, high = t + 0.01 * (t - t_prev), t * 10
        t_prev, t = t, cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, (low, high))
        f_prev, g_prev, gtd_prev = f_new, g_new, gtd_new
        f_new, g_new = evaluate(t)
        evals, it = evals + 1, it + 1
        gtd_new = float(g_new.dot(d))
    if it == most:
        bracket = [[0.0, f, g, None], [t, f_new, g_new, None]]
    lo_i = 0 if bracket[0][1] <= bracket[-1][1] else 1
    insufficient = False
    while not done and it < most:  # zoom into the bracket
        (a, fa, _, ga), (b, fb, _, gb) = bracket
        if abs(b - a) * d_norm < ZOOM_TOLERANCE:
            break
        t = cubic_minimum(a, fa, ga, b, fb, gb)
        top, bottom = max(a, b), min(a, b)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:  # too near an end: step inside, or next time
            if insufficient or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = evaluate(t)
        evals, it = evals + 1, it + 1
        gtd_new = float(g_new.dot(d))
        hi_i = 1 - lo_i
        if f_new > f + C1 * t * gtd or f_new >= bracket[lo_i][1]:
            bracket[hi_i] = [t, f_new, g_new, gtd_new]
            lo_i = 0 if bracket[0][1] <= bracket[1][1] else 1
        else:
            if abs(gtd_new) <= -C2 * gtd:
                done = True
            elif gtd_new * (bracket[hi_i][0] - bracket[lo_i][0]) >= 0:
                bracket[hi_i] = bracket[lo_i]
            bracket[lo_i] = [t, f_new, g_new, gtd_new]
    t, f_new, g_new, _ = bracket[lo_i]
    return f_new, g_new, t, evals


class LBFGS(Optimizer):
    """L-BFGS (torch's arguments, defaults and iterates).  ``step(closure)`` runs up to
    ``max_iter`` iterations, calling ``closure`` (which zeroes the gradients, computes
    the loss, calls ``backward`` and returns the loss) at most ``max_eval`` times, and
    returns the first loss.  ``line_search_fn``: None (steps of length ``lr``) or
    ``"strong_wolfe"``.  One parameter group only, as torch."""

    def __init__(self, params: Any, lr: float = 1.0, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if max_eval is None and isinstance(max_iter, Integral) and not isinstance(
                max_iter, bool):
            max_eval = max_iter * 5 // 4
        super().__init__(params, {"lr": lr, "max_iter": max_iter, "max_eval": max_eval,
                                  "tolerance_grad": tolerance_grad,
                                  "tolerance_change": tolerance_change,
                                  "history_size": history_size,
                                  "line_search_fn": line_search_fn})
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS: parameter groups are not supported (one group, as "
                             f"torch), got {len(self.param_groups)}")
        self._params = self.param_groups[0]["params"]
        dtypes = {p.dtype for p in self._params}
        if len(dtypes) != 1:
            raise TypeError(f"LBFGS: the parameters have dtypes {sorted(map(str, dtypes))}; "
                            "expected one (they are optimised as one flat vector)")

    def _check_hyper(self, group: dict[str, Any]) -> None:
        fn = "LBFGS"
        for name in ("lr", "tolerance_grad", "tolerance_change"):
            _number(fn, name, group[name])
        for name in ("max_iter", "max_eval", "history_size"):
            v = group[name]
            if isinstance(v, bool) or not isinstance(v, Integral) or v < 1:
                raise ValueError(f"{fn}: {name}={v!r} must be a positive int")
        if group["line_search_fn"] not in (None, "strong_wolfe"):
            raise ValueError(f"{fn}: line_search_fn={group['line_search_fn']!r} is not "
                             "supported; expected None or 'strong_wolfe'")

    # -- the parameters as one flat vector
    def _flat_grad(self) -> np.ndarray:
        return np.concatenate([np.zeros(p.data.size, p.dtype) if p.grad is None
                               else p.grad.data.reshape(-1).astype(p.dtype, copy=False)
                               for p in self._params])

    def _add(self, t: float, d: np.ndarray) -> None:
        """Every parameter += t times its part of ``d``, in place."""
        at = 0
        for p in self._params:
            n = p.data.size
            p.data += (d[at:at + n] * p.dtype.type(t)).reshape(p.data.shape)
            _bump_version(p)
            at += n

    def _set(self, values: list[np.ndarray]) -> None:
        for p, v in zip(self._params, values):
            np.copyto(p.data, v)
            _bump_version(p)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Up to ``max_iter`` L-BFGS iterations; returns the loss ``closure`` gave first."""
        if closure is None or not callable(closure):
            raise TypeError(f"LBFGS.step: closure={closure!r} must be a callable that "
                            "re-evaluates the model and returns the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history, line_search = group["history_size"], group["line_search_fn"]

        def evaluate() -> float:
            with enable_grad():
                return float(closure())

        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with enable_grad():
            first = closure()
        loss = float(first)
        evals = 1
        state["func_evals"] += 1
        grad = self._flat_grad()
        if np.abs(grad).max() <= tol_grad:
            return first
        d, t = state.get("d"), state.get("t")
        dirs, steps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag, prev_grad = state.get("H_diag"), state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, dirs, steps, ro, h_diag = -grad, [], [], [], 1.0
            else:  # the direction from the history: the two-loop recursion
                y, s = grad - prev_grad, d * grad.dtype.type(t)
                ys = y.dot(s)
                if ys > 1e-10:  # a curvature pair only where the curvature is positive
                    if len(dirs) == history:
                        dirs.pop(0), steps.pop(0), ro.pop(0)
                    dirs.append(y), steps.append(s), ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                alpha = [0.0] * len(dirs)
                q = -grad
                for i in range(len(dirs) - 1, -1, -1):
                    alpha[i] = steps[i].dot(q) * ro[i]
                    q = q - alpha[i] * dirs[i]
                d = r = q * h_diag
                for i in range(len(dirs)):
                    beta = dirs[i].dot(r) * ro[i]
                    r += steps[i] * (alpha[i] - beta)
            prev_grad, prev_loss = grad.copy(), loss
            t = min(1.0, 1.0 / float(np.abs(grad).sum())) * lr if state["n_iter"] == 1 else lr
            gtd = float(grad.dot(d))
            if gtd > -tol_change:  # not a descent direction any more
                break
            spent = 0
            if line_search is not None:
                start = [p.data.copy() for p in self._params]

                def along(step: float, d=d, start=start) -> tuple:
                    self._add(step, d)
                    value = evaluate()
                    found = self._flat_grad()
                    self._set(start)
                    return value, found

                loss, grad, t, spent = strong_wolfe(along, t, d, loss, grad, gtd,
                                                    max_eval - evals)
                self._add(t, d)
                converged = np.abs(grad).max() <= tol_grad
            else:
                self._add(t, d)
                converged = False
                if n_iter != max_iter:
                    loss = evaluate()
                    grad = self._flat_grad()
                    converged = np.abs(grad).max() <= tol_grad
                    spent = 1
            evals += spent
            state["func_evals"] += spent
            if (n_iter == max_iter or evals >= max_eval or converged
                    or np.abs(d * d.dtype.type(t)).max() <= tol_change
                    or abs(loss - prev_loss) < tol_change):
                break
        state.update(d=d, t=t, old_dirs=dirs, old_stps=steps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_grad, prev_loss=prev_loss)
        return first

    def load_state_dict(self, state_dict: Any) -> None:
        """As :meth:`Optimizer.load_state_dict`; the state (flat vectors, their history,
        counters) is checked against the parameters' total size."""
        saved = dict(state_dict["state"]) if isinstance(state_dict, dict) and isinstance(
            state_dict.get("state"), dict) else None
        super().load_state_dict({**state_dict, "state": {}} if saved is not None
                                else state_dict)
        if not saved:
            return
        size = sum(p.data.size for p in self._params)
        dt = self._params[0].dtype
        where = "LBFGS.load_state_dict: state"
        restored = {}
        for name, value in next(iter(saved.values())).items():
            if name in ("func_evals", "n_iter"):
                restored[name] = _cast_state(value, self._params[0], f"{where}[{name!r}]",
                                             "step")
            elif isinstance(value, list):
                restored[name] = [_flat(v, size, dt, f"{where}[{name!r}]") if np.ndim(
                    _array(v)) else float(_array(v)) for v in value]
            elif value is None or np.ndim(_array(value)) == 0:
                restored[name] = value if value is None else float(_array(value))
            else:
                restored[name] = _flat(value, size, dt, f"{where}[{name!r}]")
        self.state = {self._params[0]: restored}


def _array(value: Any) -> np.ndarray:
    return np.asarray(value.data if isinstance(value, Tensor) else value)


def _flat(value: Any, size: int, dtype: Any, where: str) -> np.ndarray:
    arr = _array(value)
    if arr.shape != (size,) or arr.dtype.kind != "f":
        raise ValueError(f"{where} of shape {arr.shape} must be a float vector of the "
                         f"parameters' total size ({size},)")
    return arr.astype(dtype)
