"""``tether._lazy``: a package's exports are its ``from M import A as A`` imports, listed once."""

from __future__ import annotations

import importlib

import pytest

from tether._lazy import exported_names

SAMPLE = '''"""A package. Docstring examples do not export: from x import y"""
from typing import TYPE_CHECKING

from tether._lazy import lazy_exports
from pkg.eager import first as first, helper  # helper is used here, not exported

if TYPE_CHECKING:
    from pkg.a import Alpha as Alpha, beta as beta
    from pkg.b import (
        Gamma as Gamma,
        private_name,
        Delta as Delta,  # a comment
    )
    from pkg.c import thing as other
'''


def test_only_redundant_aliases_are_exports() -> None:
    assert exported_names(SAMPLE) == {
        "first": "pkg.eager",
        "Alpha": "pkg.a",
        "beta": "pkg.a",
        "Gamma": "pkg.b",
        "Delta": "pkg.b",
    }


@pytest.mark.parametrize(
    "package",
    ["tether", "tether.ai", "tether.wire", "tether.agent", "tether.session", "tether.testing", "tether.rpc"],
)
def test_all_is_the_list_of_exports_and_each_lives_where_it_says(package: str) -> None:
    module = importlib.import_module(package)
    with open(module.__file__ or "", encoding="utf-8") as handle:
        names = exported_names(handle.read())
    assert module.__all__ == sorted(names)
    for name, where in names.items():
        assert getattr(module, name) is getattr(importlib.import_module(where), name)
