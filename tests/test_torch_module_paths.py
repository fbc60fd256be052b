"""``convgrad.nn.modules``: torch's module paths for convgrad's layers.  Oracle: torch's own
``torch.nn.modules`` (every name re-exported is one torch defines there, and every
convgrad layer that torch defines in one of these modules is found there too)."""

import inspect

import torch

import convgrad as cg


def test_each_path_holds_torchs_names():
    for sub in cg.nn.modules.__all__:
        ours = getattr(cg.nn.modules, sub)
        if not inspect.ismodule(ours):
            continue
        theirs = getattr(torch.nn.modules, sub)
        for name in ours.__all__:
            if not name.startswith("_"):
                assert hasattr(theirs, name), f"torch.nn.modules.{sub} has no {name}"
                assert getattr(ours, name) is getattr(cg.nn, name)


def test_every_layer_is_at_its_torch_path():
    missing = []
    for name in cg.nn.__all__:
        theirs = getattr(torch.nn, name, None)
        if not (inspect.isclass(theirs) and theirs.__module__.startswith("torch.nn.modules.")):
            continue
        sub = theirs.__module__.rsplit(".", 1)[1]
        if not hasattr(getattr(cg.nn.modules, sub, None), name):
            missing.append(f"{sub}.{name}")
    assert not missing, missing
