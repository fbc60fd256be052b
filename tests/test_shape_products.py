"""torch's shape, product, creation, window and sampling functions and Tensor methods
(``tensordot``, ``addmm`` and kin, ``block_diag``, ``broadcast_tensors``, ``atleast_3d``,
``hsplit``, ``logspace``, ``hann_window``, ``normal``, ...).

Oracle: torch.  float64 values and gradients (of a random weighting of the output) to
rounding; second order for the products; float32 values and gradients within twice
torch's own float32 error (both against torch float64 on the same values); dtypes and
the promotion tables equal; the random functions by their moments, shapes, dtypes and
``cg.manual_seed`` reproducibility (not bitwise torch's streams); error messages that
name the arguments and shapes.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import convgrad as cg

RNG = np.random.default_rng(2024)


def _flat(lib, out):
    """One Tensor of a result (a tuple of Tensors flattened and joined)."""
    if isinstance(out, tuple | list):
        return lib.cat([o.reshape(-1) for o in out]) if out else None
    return out


def _cg(t):
    """A torch Tensor's values in a convgrad Tensor of the same dtype."""
    return cg.tensor(t.numpy(), dtype=t.numpy().dtype)


def _check(fn_t, fn_c, *arrays, grad=True, tol=1e-12):
    """Values, dtypes and the gradients of a random weighting, as torch's (float64)."""
    ts = [torch.tensor(a, requires_grad=grad) for a in arrays]
    cs = [cg.tensor(a, requires_grad=grad) for a in arrays]
    want, got = _flat(torch, fn_t(*ts)), _flat(cg, fn_c(*cs))
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype == want.detach().numpy().dtype
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=tol, atol=tol)
    if not grad:
        return
    w = RNG.standard_normal(tuple(want.shape))
    (want * torch.tensor(w)).sum().backward()
    (got * cg.tensor(w)).sum().backward()
    for t, c in zip(ts, cs):
        if t.grad is None:
            assert c.grad is None or not np.any(c.grad.numpy())
        else:
            np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)


def _vander_t(x, n=None, increasing=False):
    """torch's vander by powers (torch.vander's own backward fails, a torch bug, when it
    runs in place over its cumprod)."""
    n = x.shape[0] if n is None else n
    out = x.unsqueeze(1) ** torch.arange(n, dtype=x.dtype)
    return out if increasing else out.flip(1)


# -- products: name -> (torch form, convgrad form, input shapes)
PRODUCTS = {
    "tensordot_int": (lambda a, b: torch.tensordot(a, b, 2),
                      lambda a, b: cg.tensordot(a, b, 2), [(3, 4, 5), (4, 5, 2)]),
    "tensordot_lists": (lambda a, b: torch.tensordot(a, b, ([2, 1], [0, 1])),
                        lambda a, b: cg.tensordot(a, b, ([2, 1], [0, 1])),
                        [(2, 3, 4), (4, 3, 5)]),
    "tensordot_0": (lambda a, b: torch.tensordot(a, b, 0), lambda a, b: cg.tensordot(a, b, 0),
                    [(2, 3), (3,)]),
    "addmm": (lambda i, a, b: torch.addmm(i, a, b, beta=0.5, alpha=-2.0),
              lambda i, a, b: cg.addmm(i, a, b, beta=0.5, alpha=-2.0), [(3, 5), (3, 4), (4, 5)]),
    "addmm_broadcast": (lambda i, a, b: i.addmm(a, b), lambda i, a, b: i.addmm(a, b),
                        [(5,), (3, 4), (4, 5)]),
    "addmv": (lambda i, a, v: torch.addmv(i, a, v, alpha=3.0),
              lambda i, a, v: cg.addmv(i, a, v, alpha=3.0), [(3,), (3, 4), (4,)]),
    "addr": (lambda i, u, v: i.addr(u, v, beta=2.0), lambda i, u, v: i.addr(u, v, beta=2.0),
             [(3, 4), (3,), (4,)]),
    "addbmm": (lambda i, a, b: torch.addbmm(i, a, b, beta=-1.0, alpha=0.5),
               lambda i, a, b: cg.addbmm(i, a, b, beta=-1.0, alpha=0.5),
               [(3, 5), (6, 3, 4), (6, 4, 5)]),
    "baddbmm": (lambda i, a, b: torch.baddbmm(i, a, b, beta=0.25),
                lambda i, a, b: cg.baddbmm(i, a, b, beta=0.25), [(6, 3, 5), (6, 3, 4), (6, 4, 5)]),
    "baddbmm_broadcast": (lambda i, a, b: i.baddbmm(a, b), lambda i, a, b: i.baddbmm(a, b),
                          [(3, 5), (6, 3, 4), (6, 4, 5)]),
    "vdot": (lambda a, b: torch.vdot(a, b), lambda a, b: cg.vdot(a, b), [(7,), (7,)]),
    "ger": (lambda a, b: a.ger(b), lambda a, b: a.ger(b), [(3,), (4,)]),
    "chain_matmul": (lambda *m: torch.linalg.multi_dot(m), lambda *m: cg.chain_matmul(*m),
                     [(2, 3), (3, 6), (6, 2), (2, 4)]),
    "block_diag": (lambda *t: torch.block_diag(*t), lambda *t: cg.block_diag(*t),
                   [(2, 3), (4,), (), (2, 2)]),
    "cartesian_prod": (lambda *t: torch.cartesian_prod(*t), lambda *t: cg.cartesian_prod(*t),
                       [(3,), (2,), (2,)]),
    "combinations": (lambda x: torch.combinations(x, 3), lambda x: cg.combinations(x, 3),
                     [(5,)]),
    "combinations_rep": (lambda x: torch.combinations(x, 2, with_replacement=True),
                         lambda x: cg.combinations(x, 2, with_replacement=True), [(4,)]),
    "vander": (lambda x: _vander_t(x, 5), lambda x: cg.vander(x, 5), [(4,)]),
    "vander_increasing": (lambda x: _vander_t(x, increasing=True),
                          lambda x: cg.vander(x, increasing=True), [(4,)]),
}


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_products_equal_torchs_values_and_gradients(name):
    fn_t, fn_c, shapes = PRODUCTS[name]
    _check(fn_t, fn_c, *[RNG.standard_normal(s) for s in shapes])


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_products_second_order_as_torchs(name):
    fn_t, fn_c, shapes = PRODUCTS[name]
    arrays = [RNG.standard_normal(s) for s in shapes]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    cs = [cg.tensor(a, requires_grad=True) for a in arrays]
    want, got = fn_t(*ts), fn_c(*cs)
    w = RNG.standard_normal(tuple(want.shape))
    gt = torch.autograd.grad((want * torch.tensor(w)).sum(), ts, create_graph=True)
    gc = cg.autograd.grad((got * cg.tensor(w)).sum(), cs, create_graph=True)
    vs = [RNG.standard_normal(a.shape) for a in arrays]
    st = sum((g * torch.tensor(v)).sum() for g, v in zip(gt, vs) if g.requires_grad)
    sc = sum((g * cg.tensor(v)).sum() for g, v in zip(gc, vs) if g.requires_grad)
    if not torch.is_tensor(st):  # linear in every input: no second order
        return
    ht = torch.autograd.grad(st, ts, allow_unused=True)
    hc = cg.autograd.grad(sc, cs, allow_unused=True)
    for t, c in zip(ht, hc):
        if t is None:
            assert c is None or not np.any(c.numpy())
        else:
            np.testing.assert_allclose(c.numpy(), t.numpy(), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_products_float32_within_twice_torchs_error(name):
    """float32 values and gradients against torch float64, within twice torch float32's
    error on the same values (relative 2-norm)."""
    fn_t, fn_c, shapes = PRODUCTS[name]
    arrays = [RNG.uniform(0.6, 1.6, s).astype(np.float32).astype(np.float64) for s in shapes]
    w, found = None, []
    for lib, dtype in ((torch, torch.float64), (torch, torch.float32), (cg, np.float32)):
        if lib is torch:
            ins = [torch.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
            out = fn_t(*ins)
        else:
            ins = [cg.tensor(a.astype(np.float32), requires_grad=True) for a in arrays]
            out = fn_c(*ins)
        if w is None:
            w = RNG.standard_normal(tuple(out.shape))
        wd = np.float64 if dtype == torch.float64 else np.float32
        (out * lib.tensor(w.astype(wd))).sum().backward()
        values = out.detach().numpy() if lib is torch else out.numpy()
        assert values.dtype == (np.float64 if dtype == torch.float64 else np.float32)
        found.append([np.asarray(values, np.float64)]
                     + [np.asarray(i.grad.numpy(), np.float64) for i in ins])
    for e, t, o in zip(*found):
        scale = max(np.linalg.norm(e), 1e-300)
        t_err, o_err = np.linalg.norm(t - e) / scale, np.linalg.norm(o - e) / scale
        assert o_err <= 2 * max(t_err, 2.0 ** -24), (name, o_err, t_err)


def test_beta_zero_ignores_nan_in_input_as_torch():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2))
    inp = np.full((3, 2), np.nan)
    _check(lambda i, x, y: torch.addmm(i, x, y, beta=0, alpha=1.5),
           lambda i, x, y: cg.addmm(i, x, y, beta=0, alpha=1.5), inp, a, b)
    ib = np.full((2, 3, 2), np.nan)
    ab, bb = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 4, 2))
    _check(lambda i, x, y: torch.baddbmm(i, x, y, beta=0),
           lambda i, x, y: cg.baddbmm(i, x, y, beta=0), ib, ab, bb)
    assert np.isfinite(cg.addmv(cg.tensor([np.nan] * 3), cg.ones(3, 2), cg.ones(2),
                                beta=0).numpy()).all()


def test_integer_vander_and_edge_cases_as_torchs():
    x = RNG.standard_normal(5)
    x[2] = 0.0  # the running products through a zero: torch's gradient (of its powers)
    _check(lambda t: _vander_t(t, 6), lambda t: cg.vander(t, 6), x)
    for kw in ({}, {"N": 3}, {"N": 7, "increasing": True}, {"N": 1}, {"N": 0}):
        np.testing.assert_allclose(cg.vander(cg.tensor(x), **kw).numpy(),
                                   torch.vander(torch.tensor(x), **kw).numpy(), rtol=1e-14)
    for kw in ({}, {"N": 4, "increasing": True}, {"N": 0}):
        x = torch.tensor([1, 2, -3], dtype=torch.int32)
        want = torch.vander(x, **kw)
        got = cg.vander(cg.tensor([1, 2, -3], dtype=cg.int32), **kw)
        assert got.dtype == want.numpy().dtype and got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert cg.block_diag().shape == tuple(torch.block_diag().shape)
    assert cg.block_diag(cg.tensor(2.0), cg.ones(2, dtype=cg.int64)).dtype == \
        torch.block_diag(torch.tensor(2.0), torch.ones(2, dtype=torch.int64)).numpy().dtype
    for r, rep in ((0, False), (1, False), (4, False), (2, True)):
        want = torch.combinations(torch.arange(3.0), r, with_replacement=rep)
        got = cg.combinations(cg.arange(3.0), r, with_replacement=rep)
        assert got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = cg.tensor([1.0, 2.0])
    assert cg.cartesian_prod(x) is x
    assert cg.chain_matmul(x.reshape(1, 2)).shape == (1, 2)


def test_product_errors_name_the_arguments_and_shapes():
    with pytest.raises(ValueError, match=r"mat1 of shape \(3, 4\) and mat2 of shape \(5, 2\)"):
        cg.addmm(cg.zeros(3, 2), cg.zeros(3, 4), cg.zeros(5, 2))
    with pytest.raises(ValueError, match=r"input of shape \(4, 2\) .* shape \(3, 2\)"):
        cg.addmm(cg.zeros(4, 2), cg.zeros(3, 4), cg.zeros(4, 2))
    with pytest.raises(ValueError, match=r"mat of shape \(3, 4\) and vec of shape \(5,\)"):
        cg.addmv(cg.zeros(3), cg.zeros(3, 4), cg.zeros(5))
    with pytest.raises(ValueError, match=r"batch1 of shape \(2, 3, 4\) and batch2 of shape "
                                         r"\(3, 4, 5\)"):
        cg.baddbmm(cg.zeros(2, 3, 5), cg.zeros(2, 3, 4), cg.zeros(3, 4, 5))
    with pytest.raises(ValueError, match=r"addbmm: batch1 of shape \(2, 3, 4\) and batch2"):
        cg.addbmm(cg.zeros(3, 5), cg.zeros(2, 3, 4), cg.zeros(2, 3, 5))
    with pytest.raises(ValueError, match=r"addr: vec2 must be 1-d, got shape \(2, 2\)"):
        cg.addr(cg.zeros(3, 4), cg.zeros(3), cg.zeros(2, 2))
    with pytest.raises(TypeError, match="mat2 of dtype float64 must have the dtype float32"):
        cg.addmm(cg.zeros(3, 2), cg.zeros(3, 4), cg.zeros(4, 2, dtype=cg.float64))
    with pytest.raises(TypeError, match="beta='x' must be a number"):
        cg.addmm(cg.zeros(3, 2), cg.zeros(3, 4), cg.zeros(4, 2), beta="x")
    with pytest.raises(ValueError, match=r"vdot: .* shapes \(3,\) and \(4,\)"):
        cg.vdot(cg.zeros(3), cg.zeros(4))
    with pytest.raises(ValueError, match=r"dim 1 of a of shape \(2, 3\) and dim 0 of b of "
                                         r"shape \(4, 5\)"):
        cg.tensordot(cg.zeros(2, 3), cg.zeros(4, 5), 1)
    with pytest.raises(ValueError, match=r"dims=3 exceeds .* \(2, 3\) .* \(3, 5\)"):
        cg.tensordot(cg.zeros(2, 3), cg.zeros(3, 5), 3)
    with pytest.raises(TypeError, match="dims=\\[1, 0\\] must be an int or a pair of lists"):
        cg.tensordot(cg.zeros(2, 3), cg.zeros(3, 5), [1, 0])
    with pytest.raises(ValueError, match=r"matrices\[1\] of shape \(4, 2\) and matrices\[2\]"):
        cg.chain_matmul(cg.zeros(2, 4), cg.zeros(4, 2), cg.zeros(3, 2))
    with pytest.raises(ValueError, match=r"tensors\[1\] of shape \(2, 2, 2\) must have at "
                                         "most 2 dims"):
        cg.block_diag(cg.zeros(2), cg.zeros(2, 2, 2))
    with pytest.raises(TypeError, match=r"tensors\[1\] of dtype float64 must have the dtype"):
        cg.cartesian_prod(cg.zeros(2), cg.zeros(2, dtype=cg.float64))
    with pytest.raises(ValueError, match="r=-1 must be >= 0"):
        cg.combinations(cg.zeros(3), -1)
    with pytest.raises(ValueError, match=r"vander: x of shape \(2, 2\) must be 1-d"):
        cg.vander(cg.zeros(2, 2))


# -- shapes
SHAPES = {
    "broadcast_to": (lambda x: torch.broadcast_to(x, (2, 3, 4)),
                     lambda x: cg.broadcast_to(x, (2, 3, 4)), [(3, 1)]),
    "broadcast_to_method": (lambda x: x.broadcast_to(4, -1), lambda x: x.broadcast_to(4, -1),
                            [(1, 3)]),
    "broadcast_tensors": (lambda a, b, c: torch.broadcast_tensors(a, b, c),
                          lambda a, b, c: cg.broadcast_tensors(a, b, c), [(3, 1), (4,), ()]),
    "atleast_1d": (lambda a, b: torch.atleast_1d(a, b), lambda a, b: cg.atleast_1d(a, b),
                   [(), (2, 3)]),
    "atleast_2d": (lambda a, b: torch.atleast_2d([a, b]), lambda a, b: cg.atleast_2d([a, b]),
                   [(), (3,)]),
    "atleast_3d": (lambda a, b, c, d: torch.atleast_3d(a, b, c, d),
                   lambda a, b, c, d: cg.atleast_3d(a, b, c, d), [(), (3,), (2, 3), (2, 1, 3, 2)]),
    "moveaxis": (lambda x: torch.moveaxis(x, (0, 1), (2, 0)),
                 lambda x: cg.moveaxis(x, (0, 1), (2, 0)), [(2, 3, 4)]),
    "ravel": (lambda x: torch.ravel(x.transpose(0, 1)), lambda x: cg.ravel(x.transpose(0, 1)),
              [(2, 3)]),
    "ravel_method": (lambda x: x.ravel(), lambda x: x.ravel(), [(2, 3, 2)]),
    "dstack": (lambda a, b, c: torch.dstack([a, b, c]), lambda a, b, c: cg.dstack([a, b, c]),
               [(3,), (1, 3), (1, 3, 2)]),
    "column_stack": (lambda a, b, c: torch.column_stack([a, b, c]),
                     lambda a, b, c: cg.column_stack([a, b, c]), [(3,), (3, 2), (3,)]),
    "column_stack_0d": (lambda a, b: torch.column_stack([a, b]),
                        lambda a, b: cg.column_stack([a, b]), [(), (1,)]),
    "row_stack": (lambda a, b: torch.row_stack((a, b)), lambda a, b: cg.row_stack((a, b)),
                  [(3,), (2, 3)]),
    "hsplit": (lambda x: torch.hsplit(x, 3), lambda x: cg.hsplit(x, 3), [(2, 6, 2)]),
    "hsplit_1d": (lambda x: x.hsplit([1, 4]), lambda x: x.hsplit([1, 4]), [(6,)]),
    "vsplit": (lambda x: torch.vsplit(x, [2, 3]), lambda x: cg.vsplit(x, [2, 3]), [(5, 2)]),
    "vsplit_method": (lambda x: x.vsplit(2), lambda x: x.vsplit(2), [(4, 3)]),
    "dsplit": (lambda x: torch.dsplit(x, 2), lambda x: cg.dsplit(x, 2), [(2, 1, 4)]),
    "dsplit_method": (lambda x: x.dsplit([3]), lambda x: x.dsplit([3]), [(2, 1, 4)]),
    "split_with_sizes": (lambda x: x.split_with_sizes([1, 3], 1),
                         lambda x: x.split_with_sizes([1, 3], 1), [(2, 4)]),
    "split_with_sizes_fn": (lambda x: torch.split_with_sizes(x, [2, 0, 1]),
                            lambda x: cg.split_with_sizes(x, [2, 0, 1]), [(3, 2)]),
    "unsafe_split": (lambda x: torch.unsafe_split(x, 2, 1), lambda x: cg.unsafe_split(x, 2, 1),
                     [(2, 5)]),
    "unsafe_chunk": (lambda x: x.unsafe_chunk(3), lambda x: x.unsafe_chunk(3), [(7, 2)]),
    "rsub": (lambda a, b: torch.rsub(a, b, alpha=2.5), lambda a, b: cg.rsub(a, b, alpha=2.5),
             [(3, 4), (4,)]),
    "rsub_scalar": (lambda a: torch.rsub(a, 3.0), lambda a: cg.rsub(a, 3.0), [(3,)]),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape_functions_equal_torchs(name):
    fn_t, fn_c, shapes = SHAPES[name]
    arrays = [RNG.standard_normal(s) for s in shapes]
    _check(fn_t, fn_c, *arrays)
    # the same structure: one Tensor or a tuple of as many, of the same shapes
    want = fn_t(*[torch.tensor(a) for a in arrays])
    got = fn_c(*[cg.tensor(a) for a in arrays])
    assert isinstance(got, tuple) == isinstance(want, tuple | list)
    if isinstance(got, tuple):
        assert [tuple(t.shape) for t in want] == [t.shape for t in got]


def test_broadcast_shapes_and_sizes_as_torchs():
    for shapes in ((2, (3, 1)), ((1, 4), (3, 1), ()), ((0, 1), (2,))):
        assert cg.broadcast_shapes(*shapes) == tuple(torch.broadcast_shapes(*shapes))
    for dtype in (torch.float32, torch.float64, torch.int32, torch.int64, torch.bool):
        t = torch.zeros(2, 3, 4, dtype=dtype)
        c = _cg(t)
        assert (c.nbytes, c.itemsize, c.ndimension(), c.nelement()) == \
            (t.nbytes, t.itemsize, t.ndimension(), t.nelement())
    for name, missing in (("byte", "uint8"), ("short", "int16"), ("char", "int8")):
        with pytest.raises(TypeError, match=f"{name}: {missing} Tensors are not supported"):
            getattr(cg.ones(2), name)()


DTYPES = [(torch.float32, cg.float32), (torch.float64, cg.float64), (torch.int32, cg.int32),
          (torch.int64, cg.int64), (torch.bool, cg.bool)]


def test_promotion_tables_equal_torchs():
    for ta, ca in DTYPES:
        for tb, cb in DTYPES:
            assert cg.promote_types(ca, cb) == torch.empty(0, dtype=torch.promote_types(
                ta, tb)).numpy().dtype, (ta, tb)
            assert cg.can_cast(ca, cb) == torch.can_cast(ta, tb), (ta, tb)
            for shape_a, shape_b in (((2,), (2,)), ((), (2,)), ((2,), ())):
                x, y = torch.ones(shape_a, dtype=ta), torch.ones(shape_b, dtype=tb)
                want = torch.empty(0, dtype=torch.result_type(x, y)).numpy().dtype
                assert cg.result_type(_cg(x), _cg(y)) == want
            for number in (True, 2, 2.5):
                x = torch.ones(2, dtype=ta)
                want = torch.empty(0, dtype=torch.result_type(x, number)).numpy().dtype
                assert cg.result_type(_cg(x), number) == want, (ta, number)
    assert cg.result_type(2, 2.5) == np.float32
    with pytest.raises(TypeError, match="result_type: tensor2='a' must be a Tensor or a "
                                        "number"):
        cg.result_type(cg.ones(2), "a")
    with pytest.raises(TypeError, match="promote_types: dtype="):
        cg.promote_types(cg.float16, cg.float32)


def test_shape_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"shapes \(3, 2\), \(4,\) do not broadcast"):
        cg.broadcast_tensors(cg.zeros(3, 2), cg.zeros(4))
    with pytest.raises(ValueError, match=r"shapes \(2,\), \(3,\) do not broadcast"):
        cg.broadcast_shapes((2,), (3,))
    with pytest.raises(TypeError, match="broadcast_shapes: shape 'a'"):
        cg.broadcast_shapes("a")
    with pytest.raises(ValueError, match=r"hsplit: sections=3 must divide the size 4 of dim 1"):
        cg.hsplit(cg.zeros(2, 4), 3)
    with pytest.raises(ValueError, match=r"vsplit: needs a Tensor of at least 2 dims, got "
                                         r"shape \(4,\)"):
        cg.zeros(4).vsplit(2)
    with pytest.raises(ValueError, match=r"dsplit: needs .* 3 dims, got shape \(2, 2\)"):
        cg.dsplit(cg.zeros(2, 2), 2)
    with pytest.raises(TypeError, match="hsplit: indices_or_sections=2.5"):
        cg.zeros(4).hsplit(2.5)
    with pytest.raises(ValueError, match=r"sections=\[1, 2\] sum to 3, expected the size 4"):
        cg.split_with_sizes(cg.zeros(4), [1, 2])
    with pytest.raises(TypeError, match="split_with_sizes: split_sizes=2 must be a sequence"):
        cg.zeros(4).split_with_sizes(2)
    with pytest.raises(ValueError, match="dstack: tensors is empty"):
        cg.dstack([])
    with pytest.raises(TypeError, match="column_stack: tensors must be a sequence"):
        cg.column_stack(cg.zeros(2))


# -- creation
def test_scalar_tensor_empty_strided_logspace_as_torchs():
    for s, kw in ((3, {}), (2.5, {"dtype": cg.float64}), (7, {"dtype": cg.int64})):
        tkw = {"dtype": getattr(torch, str(kw["dtype"]))} if kw else {}
        want, got = torch.scalar_tensor(s, **tkw), cg.scalar_tensor(s, **kw)
        assert got.shape == () and got.dtype == want.numpy().dtype and got.item() == want.item()
    assert cg.scalar_tensor(1.0, requires_grad=True).requires_grad
    for size, stride in (((2, 3), (1, 2)), ((2, 3, 4), (12, 1, 3)), ((0, 3), (3, 1))):
        got, want = cg.empty_strided(size, stride), torch.empty_strided(size, stride)
        assert got.shape == tuple(want.shape) and got.dtype == np.float32
        if 0 not in size:
            assert got.stride() == want.stride()
    for args, kw in (((0, 3, 4), {}), ((-2.0, 3.0, 7), {"base": 3.0}), ((1, -1, 5),
                     {"base": 2}), ((2, 5, 1), {}), ((0, 1, 0), {}), ((0.5, 4.5, 10), {})):
        want = torch.logspace(*args, dtype=torch.float64, **kw).numpy()
        got = cg.logspace(*args, dtype=cg.float64, **kw).numpy()
        np.testing.assert_allclose(got, want, rtol=4e-16, atol=0)
        want32, got32 = torch.logspace(*args, **kw).numpy(), cg.logspace(*args, **kw).numpy()
        assert got32.dtype == want32.dtype
        np.testing.assert_allclose(got32, want32, rtol=2e-6)
    with pytest.raises(ValueError, match=r"size=\(2, 3\) and stride=\(1,\) must have one entry"):
        cg.empty_strided((2, 3), (1,))
    with pytest.raises(ValueError, match="logspace: steps=-1 must be an int >= 0"):
        cg.logspace(0, 1, -1)
    with pytest.raises(TypeError, match="scalar_tensor: s='a' must be a number"):
        cg.scalar_tensor("a")


def test_randint_like_draws_in_range_shape_and_dtype():
    for dtype in (cg.float32, cg.int32, cg.int64):
        x = cg.zeros(40, 50, dtype=dtype)
        for args in ((5,), (-3, 4)):
            got = cg.randint_like(x, *args)
            want = torch.randint_like(torch.zeros(1, dtype=getattr(torch, str(dtype))), *args)
            lo, hi = (0, args[0]) if len(args) == 1 else args
            assert got.shape == x.shape and got.dtype == want.numpy().dtype
            assert got.numpy().min() == lo and got.numpy().max() == hi - 1
    assert cg.randint_like(cg.zeros(3), 2, dtype=cg.int64).dtype == np.int64
    cg.manual_seed(5)
    a = cg.randint_like(cg.zeros(10), 100)
    cg.manual_seed(5)
    np.testing.assert_array_equal(a.numpy(), cg.randint_like(cg.zeros(10), 100).numpy())
    with pytest.raises(ValueError, match="randint_like: low=4 must be < high=4"):
        cg.randint_like(cg.zeros(2), 4, 4)


# -- windows
WINDOWS = [("hann_window", {}), ("hamming_window", {}),
           ("hamming_window", {"alpha": 0.5, "beta": 0.3}), ("blackman_window", {}),
           ("bartlett_window", {}), ("kaiser_window", {}), ("kaiser_window", {"beta": 3.5})]


@pytest.mark.parametrize("name,kw", WINDOWS)
def test_windows_equal_torchs(name, kw):
    for n in range(0, 12):
        for periodic in (True, False):
            want = getattr(torch, name)(n, periodic, dtype=torch.float64, **kw).numpy()
            got = getattr(cg, name)(n, periodic, dtype=cg.float64, **kw).numpy()
            assert got.shape == want.shape and got.dtype == np.float64
            np.testing.assert_allclose(got, want, rtol=1e-14, atol=2e-16)
    want32 = getattr(torch, name)(9, True, **kw).numpy()
    got32 = getattr(cg, name)(9, **kw).numpy()
    assert got32.dtype == want32.dtype == np.float32
    np.testing.assert_allclose(got32, want32, rtol=2e-6, atol=1e-7)
    default = getattr(cg, name)(8, dtype=cg.float64).numpy()  # periodic by default
    np.testing.assert_array_equal(
        default, getattr(cg, name)(9, False, dtype=cg.float64).numpy()[:8])
    assert getattr(cg, name)(4, requires_grad=True).requires_grad


def test_window_errors():
    with pytest.raises(TypeError,
                       match="hann_window: dtype=.*int64.* is not supported; expected float32"):
        cg.hann_window(4, dtype=cg.int64)
    with pytest.raises(ValueError, match="blackman_window: window_length=-1 must be >= 0"):
        cg.blackman_window(-1)
    with pytest.raises(TypeError, match="bartlett_window: window_length=2.0 must be an int"):
        cg.bartlett_window(2.0)
    with pytest.raises(TypeError, match="hamming_window: periodic=1 must be a bool"):
        cg.hamming_window(4, 1)
    with pytest.raises(ValueError, match="kaiser_window: beta=-1.0 must be >= 0"):
        cg.kaiser_window(4, beta=-1.0)


# -- sampling
def _moments(x: np.ndarray) -> tuple:
    return float(x.mean()), float(x.std())


def test_normal_in_torchs_four_forms():
    n = 200_000
    cg.manual_seed(0)
    mean = cg.full((n,), 2.0, dtype=cg.float64)
    std = cg.full((n,), 3.0, dtype=cg.float64)
    for got, m, s, dt in ((cg.normal(mean, std), 2.0, 3.0, np.float64),
                          (cg.normal(mean, 0.5), 2.0, 0.5, np.float64),
                          (cg.normal(-1.0, std.float()), -1.0, 3.0, np.float32),
                          (cg.normal(1.0, 2.0, (n,)), 1.0, 2.0, np.float32),
                          (cg.normal(1.0, 2.0, size=(400, 500), dtype=cg.float64), 1.0, 2.0,
                           np.float64)):
        mu, sd = _moments(got.numpy().astype(np.float64))
        assert got.dtype == dt and got.numel() == n
        assert abs(mu - m) < 5 * s / np.sqrt(n) and abs(sd - s) < 0.02 * s
    # broadcasting, the shapes and dtypes torch gives
    for mt, st in (((2, 1), (3,)), ((4,), ())):
        want = torch.normal(torch.zeros(mt), torch.ones(st) if st else 1.0)
        got = cg.normal(cg.zeros(*mt), cg.ones(*st) if st else 1.0)
        assert got.shape == tuple(want.shape) and got.dtype == want.numpy().dtype
    # reproducible under cg.manual_seed, and through a generator
    cg.manual_seed(7)
    a = cg.normal(cg.zeros(5), 1.0).numpy()
    cg.manual_seed(7)
    np.testing.assert_array_equal(a, cg.normal(cg.zeros(5), 1.0).numpy())
    np.testing.assert_array_equal(cg.normal(0.0, 1.0, (4,), generator=3).numpy(),
                                  cg.normal(0.0, 1.0, (4,), generator=3).numpy())
    # no reparameterisation: a zero gradient, as torch
    m = cg.zeros(3, requires_grad=True)
    s = cg.ones(3, requires_grad=True)
    out = cg.normal(m, s)
    assert out.requires_grad
    out.sum().backward()
    assert not np.any(m.grad.numpy()) and not np.any(s.grad.numpy())


def test_normal_errors():
    with pytest.raises(ValueError, match=r"mean of shape \(2,\) and std of shape \(3,\) do "
                                         "not broadcast"):
        cg.normal(cg.zeros(2), cg.ones(3))
    with pytest.raises(ValueError, match="normal: std must be >= 0"):
        cg.normal(cg.zeros(2), -1.0)
    with pytest.raises(TypeError, match="normal: with numbers for mean and std, size is "
                                        "required"):
        cg.normal(0.0, 1.0)
    with pytest.raises(TypeError, match="normal: mean of dtype int64 must be a float Tensor"):
        cg.normal(cg.zeros(2, dtype=cg.int64), 1.0)
    with pytest.raises(TypeError, match="normal: size=.* is only for numbers"):
        cg.normal(cg.zeros(2), 1.0, (2,))


def test_poisson_and_bernoulli_moments_dtypes_and_seed():
    rates = cg.tensor(np.repeat([0.5, 4.0, 30.0], 60_000), dtype=cg.float64)
    cg.manual_seed(1)
    p = cg.poisson(rates)
    assert p.dtype == np.float64 and p.shape == rates.shape
    for i, lam in enumerate((0.5, 4.0, 30.0)):
        part = p.numpy()[i * 60_000:(i + 1) * 60_000]
        assert abs(part.mean() - lam) < 5 * np.sqrt(lam / 60_000)
        assert abs(part.var() - lam) < 0.05 * lam
        assert np.all(part == np.round(part)) and part.min() >= 0
    cg.manual_seed(1)
    np.testing.assert_array_equal(cg.poisson(rates).numpy(), p.numpy())
    probs = cg.tensor(np.repeat([0.0, 0.3, 1.0], 50_000).astype(np.float32))
    b = cg.bernoulli(probs)
    assert b.dtype == np.float32 and set(np.unique(b.numpy())) <= {0.0, 1.0}
    parts = b.numpy().reshape(3, -1).mean(1)
    assert parts[0] == 0 and parts[2] == 1 and abs(parts[1] - 0.3) < 0.01
    m = cg.zeros(100_000, dtype=cg.float64).bernoulli(0.8)
    assert m.dtype == np.float64 and abs(m.numpy().mean() - 0.8) < 0.01
    assert cg.zeros(3, dtype=cg.int64).bernoulli(0.5).dtype == \
        torch.zeros(3, dtype=torch.int64).bernoulli(0.5).numpy().dtype
    cg.manual_seed(2)
    c = cg.rand(8).bernoulli().numpy()
    cg.manual_seed(2)
    np.testing.assert_array_equal(cg.rand(8).bernoulli().numpy(), c)
    x = cg.full((4,), 0.5, requires_grad=True)
    out = cg.bernoulli(x)
    assert out.requires_grad
    out.sum().backward()
    assert not np.any(x.grad.numpy())
    with pytest.raises(ValueError, match="poisson: the rates in input must be >= 0"):
        cg.poisson(cg.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"bernoulli: the probabilities in input must be in "
                                         r"\[0, 1\]"):
        cg.bernoulli(cg.tensor([0.5, 1.5]))
    with pytest.raises(ValueError, match=r"probabilities in p=2 must be in \[0, 1\]"):
        cg.ones(2).bernoulli(2)
    with pytest.raises(TypeError, match="bernoulli: input of dtype int64 holds probabilities"):
        cg.bernoulli(cg.zeros(2, dtype=cg.int64))
