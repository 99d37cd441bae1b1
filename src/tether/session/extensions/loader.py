"""Finding and importing extensions: files and packages in extension folders, entry points, and
paths given for one run (``-e PATH``).

An extension is a ``.py`` file or a folder with ``__init__.py``; it must define ``setup(api)``.
Importing runs the extension's code, which is why a project's ``.tether/extensions/`` is only
read for a trusted project (``tether.session.resources`` decides). Anything that goes wrong while
loading one extension (a syntax error, a missing ``setup``, an exception in it) becomes one line
naming the extension, and the others still load.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import CodeType, ModuleType

from tether.agent.tool import AgentTool
from tether.agent.tool_check import name_problem, parameters_problem
from tether.session.extensions.api import ExtensionAPI, ExtensionUI, SessionControl, Shared
from tether.session.extensions.host import ExtensionHost, LoadedExtension


def extension_files(folder: Path) -> list[Path]:
    """The extensions of a folder: ``*.py`` files and packages (``_``-prefixed names skipped)."""
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return []
    return [
        child
        for child in children
        if not child.name.startswith(("_", "."))
        and ((child.suffix == ".py" and child.is_file()) or (child / "__init__.py").is_file())
    ]


def extension_name(path: Path) -> str:
    """An extension file's name: ``x.py`` and the package folder ``x/`` are both ``x``."""
    return path.stem if path.suffix == ".py" else path.name


def load_extensions(
    cwd: Path,
    paths: Sequence[Path],
    entry_points: Sequence[tuple[str, str]] = (),
    pinned: Mapping[Path, Mapping[str, bytes]] | None = None,
) -> ExtensionHost:
    """Import each extension and run its ``setup``; problems are kept on the host, one per line.
    An extension of ``pinned`` runs the source given there (its files' bytes by path, as its
    trust grant hashed them), not the files as they are by the time of the import."""
    loaded: list[LoadedExtension] = []
    problems: list[str] = []
    host_ref: list[ExtensionHost] = []
    shared = Shared()

    def ui() -> ExtensionUI:
        return host_ref[0].ui

    def session() -> SessionControl | None:
        return host_ref[0].session if host_ref else None

    for path in paths:
        name = extension_name(path)
        files = (pinned or {}).get(path)
        extension, problem = _load(
            name, str(path), lambda p=path, f=files: _import_path(p, f), cwd, ui, session, shared
        )
        loaded += [extension] if extension is not None else []
        problems += [problem] if problem is not None else []
    for name, target in entry_points:
        origin = f"entry point {name} ({target})"
        extension, problem = _load(name, origin, lambda t=target: _import_target(t), cwd, ui, session, shared)
        loaded += [extension] if extension is not None else []
        problems += [problem] if problem is not None else []
    problems += _refuse_bad_tools(loaded)
    host = ExtensionHost(loaded, problems, shared)
    host_ref.append(host)
    return host


def _refuse_bad_tools(loaded: Sequence[LoadedExtension]) -> list[str]:
    """Leave out the tools no provider would take (``tether.agent.tool_check``: such a tool
    fails every request, not only its own calls) and a second tool of a name already taken by
    an extension (which of the two the model called would depend on load order); one line each.
    The extension's other tools stay."""
    problems: list[str] = []
    owners: dict[str, str] = {}
    for extension in loaded:
        kept: list[AgentTool] = []
        for tool in extension.registered.tools:
            problem = name_problem(tool.name) or parameters_problem(tool.parameters)
            if problem is None and tool.name in owners:
                problem = f"the name is taken by a tool of extension {owners[tool.name]}"
            if problem is not None:
                problems.append(
                    f"extension {extension.name} ({extension.origin}): tool {tool.name!r} left out: {problem}"
                )
                continue
            owners[tool.name] = extension.name
            kept.append(tool)
        extension.registered.tools[:] = kept
    return problems


def _load(
    name: str,
    origin: str,
    load: Callable[[], object],
    cwd: Path,
    ui: Callable[[], ExtensionUI],
    session: Callable[[], SessionControl | None],
    shared: Shared,
) -> tuple[LoadedExtension | None, str | None]:
    try:
        target = load()
        setup = getattr(target, "setup", None) if isinstance(target, ModuleType) else target
        if not callable(setup):
            return None, f"extension {name} ({origin}): no setup(api) function; not loaded"
        api = ExtensionAPI(name, cwd, ui, session, shared)
        outcome = setup(api)
        if inspect.isawaitable(outcome):
            close = getattr(outcome, "close", None)
            if callable(close):
                close()
            return None, f"extension {name} ({origin}): setup(api) must be a plain function, not async"
    except Exception as exc:
        return None, f"extension {name} ({origin}) failed to load: {type(exc).__name__}: {exc}"
    except SystemExit:
        return None, f"extension {name} ({origin}) called exit() while loading; not loaded"
    except KeyboardInterrupt:  # the user's Ctrl-C stops tether, whatever was loading
        raise
    except BaseException as exc:  # GeneratorExit, a bare BaseException: a failure like the others
        return None, f"extension {name} ({origin}) failed to load: {type(exc).__name__}: {exc}"
    return LoadedExtension(name, origin, api.registered), None


class _SourceOnly(importlib.machinery.SourceFileLoader):
    """Runs a ``.py`` file's own text, never a ``__pycache__`` bytecode file beside it: Python
    runs an unchecked-hash ``.pyc`` whatever the source says, so a repository committing one ran
    other code than the file its trust grant hashed (``tether.session.trust_items``). Nor does it
    write bytecode into the project."""

    files: Mapping[str, bytes] | None = None
    """The source to run, by path (``load_extensions``' ``pinned``): read again, a file rewritten
    since its grant's hash was made would run unseen; a module not among them is not imported."""

    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        if self.files is None:
            return self.source_to_code(self.get_data(path), path)
        source = self.files.get(path)
        if source is None:
            raise ImportError(f"{path}: not among the files its trust grant covers", path=path)
        return self.source_to_code(source, path)


class _PinnedPackages(importlib.abc.MetaPathFinder):
    """Finds every module of a package imported pinned (``load_extensions``' ``pinned``) in the
    bytes its trust grant hashed, and nowhere else: the folders' own finders read the disk as it
    is by the time of the import, so a module of a folder the hash never walked (a linked one)
    ran unseen, and so did native code (a ``helper.so`` added beside the granted ``helper.py``
    shadows it; one hashed is loaded from the disk again, after the hash). Native modules are
    therefore not run for such a grant (one trusting the folder whole runs them). One finder,
    first on ``sys.meta_path``, for all of them: a package's entry is replaced when it is
    imported again, and taken out when it is imported unpinned."""

    def __init__(self) -> None:
        self.packages: dict[str, tuple[Path, Mapping[str, bytes], type[_SourceOnly]]] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, rest = fullname.rpartition(".")
        while package and package not in self.packages:
            package, _, first = package.rpartition(".")
            rest = f"{first}.{rest}"
        if not package:
            return None
        folder, files, loader = self.packages[package]
        where = folder.joinpath(*rest.split("."))
        for file, inside in ((str(where / "__init__.py"), [str(where)]), (f"{where}.py", None)):
            if file in files:
                return importlib.util.spec_from_file_location(
                    fullname, file, loader=loader(fullname, file), submodule_search_locations=inside
                )
        if any(name.startswith(f"{where}{os.sep}") for name in files):  # a folder without __init__.py
            spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
            spec.submodule_search_locations = [str(where)]
            return spec
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            if f"{where}{suffix}" in files:
                raise ImportError(
                    f"{where}{suffix}: a native module is not run for a grant of the package's files"
                    " (trust the folder whole to run it)",
                    name=fullname,
                )
        raise ModuleNotFoundError(
            f"No module named {fullname!r}: {where}.py is not among the files its trust grant covers",
            name=fullname,
        )


_PINNED = _PinnedPackages()


def _import_path(path: Path, files: Mapping[str, bytes] | None = None) -> ModuleType:
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    package = path.is_dir()
    location = path / "__init__.py" if package else path
    module_name = f"tether_extension_{abs(hash(str(path.resolve()))):x}_{path.stem}".replace("-", "_")
    source = _SourceOnly if files is None else type("_Pinned", (_SourceOnly,), {"files": files})
    _PINNED.packages.pop(module_name, None)
    for stale in [name for name in sys.modules if name.startswith(f"{module_name}.")]:
        del sys.modules[stale]  # imported before, from other bytes: a module is found anew
    if package and files is not None:
        if _PINNED not in sys.meta_path:
            sys.meta_path.insert(0, _PINNED)
        _PINNED.packages[module_name] = (path, files, source)
    elif package:  # its modules too: each folder's finder is one that reads source (or native code)
        for folder, subfolders, _ in os.walk(path):
            subfolders[:] = [d for d in subfolders if d != "__pycache__"]
            sys.path_importer_cache[folder] = importlib.machinery.FileFinder(
                folder,
                (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
                (source, importlib.machinery.SOURCE_SUFFIXES),
            )
    spec = importlib.util.spec_from_file_location(
        module_name,
        location,
        loader=source(module_name, str(location)),
        submodule_search_locations=[str(path)] if package else None,
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look a module up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def _import_target(target: str) -> object:
    """``module`` or ``module:attr`` (an entry point's value)."""
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name.strip())
    result: object = module
    for part in attribute.strip().split(".") if attribute.strip() else ():
        result = getattr(result, part)
    return result
