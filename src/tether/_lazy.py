"""Lazy public names for package ``__init__`` modules (PEP 562 ``__getattr__``/``__dir__``).

Each package imports a submodule only when one of its names is first used, so ``import tether.ai``
does not pay for every provider and ``tether --version`` or ``tether -p`` load only what they
touch. The package's public names are written once, as ``from M import A as A`` imports (under
``if TYPE_CHECKING:`` for the lazy ones): type checkers read the redundant alias as a re-export,
and ``lazy_exports`` reads the same lines from the package's source to learn where each name lives
and what ``__all__`` is. A hand parser, not ``ast``: these are ruff-formatted imports, and
importing ``ast`` would cost start-up more than the whole read.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import ...`: `import tether` for --version must stay free
if TYPE_CHECKING:
    from collections.abc import Callable, MutableMapping


def lazy_exports(
    package: str, source_file: str, namespace: MutableMapping[str, object]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose ``__init__`` is ``source_file``.

    Sets ``__all__`` (every exported name) and ``_LAZY`` (name -> module) in ``namespace``."""
    with open(source_file, encoding="utf-8") as handle:
        names = exported_names(handle.read())
    namespace["_LAZY"] = names
    namespace["__all__"] = sorted(names)

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


def exported_names(source: str) -> dict[str, str]:
    """``{name: module}`` of every ``from M import A as A`` in ``source``.

    The redundant alias is PEP 484's mark of a re-export, so the names type checkers take as the
    package's API are exactly the names listed here."""
    names: dict[str, str] = {}
    module, clause = "", ""
    for line in source.splitlines():
        code = line.partition("#")[0].strip()
        if not clause:
            if not code.startswith("from ") or " import " not in code:
                continue
            module, _, code = code[5:].partition(" import ")
        clause += " " + code
        if "(" in clause and ")" not in clause:
            continue  # a parenthesised import goes on
        words = clause.replace("(", " ").replace(")", " ").replace(",", " ").split()
        for index in range(len(words) - 2):
            if words[index + 1] == "as" and words[index] == words[index + 2]:
                names[words[index]] = module.strip()
        clause = ""
    return names
