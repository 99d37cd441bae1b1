"""Lazy public names for package ``__init__`` modules (PEP 562 ``__getattr__``/``__dir__``).

Each package lists where its public names live and imports a submodule only when one of its names
is first used, so ``import tether.ai`` does not pay for every provider and ``tether --version``
or ``tether -p`` load only what they touch. Type checkers still see every name through the
package's ``TYPE_CHECKING`` imports.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import ...`: `import tether` for --version must stay free
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, MutableMapping


def lazy_exports(
    package: str, names: Mapping[str, str], namespace: MutableMapping[str, object]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``names`` maps a name to its module."""

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(__import__(module, fromlist=(name,)), name)  # importlib would cost --version
        namespace[name] = value  # cached: the next lookup is a plain module attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return __getattr__, __dir__
