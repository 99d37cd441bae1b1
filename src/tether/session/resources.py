"""What the user's files add to a session: skills, prompt templates and extensions.

Where each comes from, first match winning on a name:

- skills: the user's ``<config>/skills/``, ``~/.agents/skills/``, ``~/.claude/skills/`` and
  ``~/.pi/agent/skills/``; then the project's ``.tether/skills/`` (trusted projects only),
  ``.agents/skills/``, ``.claude/skills/`` and ``.pi/skills/`` of the working directory and its
  parents up to the repository root. Each source is switched in settings
  (``"skills": {"claude": false}``);
- prompt templates: ``<config>/prompts/``, ``~/.pi/agent/prompts/`` and ``~/.claude/commands/``
  first (a repository never replaces the user's own), then the project's ``.tether/prompts/``
  (trusted), pi's ``.pi/prompts/`` and Claude Code's ``.claude/commands/`` (subfolders too) of
  the working directory and its parents up to the repository root;
- extensions: ``<config>/extensions/``, the project's ``.tether/extensions/`` (trusted), the
  entry-point group ``tether.extensions``, then the paths given for the run (``-e``).

The user's own come first: a cloned repository must not replace a skill or command the user
relies on by giving its own the same name (the repository's is reported as shadowed). A
project's files are read under ``tether.own_files``'s policy: a ``SKILL.md`` linking out
of the repository is refused.

A project's ``.tether/`` folder travels with the repository, so what it would add (instructions
for the model, commands, code that runs in this process) is taken only from a project the user
trusted (``tether.session.trust``); otherwise a warning says what was left out. The other agents'
folders hold instructions only, the files those agents read too.

Start-up cost: this module is stdlib-only, and a session without any of these files pays a few
``stat`` calls and one small cache read; the parsers and the extension machinery are imported
only when there is something for them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tether.own_files import make_own_folder, read_own_file, write_own_file
from tether.tools.sandbox_protect import is_repository

if TYPE_CHECKING:
    from typing import TypeAlias

    from tether.session.extensions.api import ExtensionCommand
    from tether.session.extensions.host import ExtensionHost
    from tether.session.settings import Settings
    from tether.session.skills import Skill
    from tether.session.templates import PromptTemplate
    from tether.session.trust import Granted

if TYPE_CHECKING:
    CommandSource: TypeAlias = Literal["prompt", "skill", "extension"]


class CommandInfo:
    """A slash command a user's file added (``get_commands``, ``/help``, completion, ACP).

    A plain class rather than a dataclass: this module loads on every start, and building a
    dataclass costs more than the rest of the module (see ``bench/p3_cold_start.py``)."""

    __slots__ = ("description", "name", "path", "scope", "source")
    name: str
    description: str
    source: CommandSource
    path: str
    """The file it comes from (an extension's origin for its commands)."""
    scope: Literal["user", "project", "temporary"]

    def __init__(
        self,
        name: str,
        description: str,
        source: CommandSource,
        path: str,
        scope: Literal["user", "project", "temporary"],
    ) -> None:
        self.name = name
        self.description = description
        self.source = source
        self.path = path
        self.scope = scope

    def __repr__(self) -> str:
        return f"CommandInfo({self.name!r}, {self.source!r}, {self.path!r})"


class Resources:
    """The skills, templates and extensions of one session, and the slash commands they add.

    Args:
        skills: In precedence order, names unique.
        templates: In precedence order, names unique.
        extensions: The loaded extensions (``None``: none were looked for or found).
        warnings: One line per file that could not be used or was left out.
    """

    def __init__(
        self,
        skills: Sequence[Skill] = (),
        templates: Sequence[PromptTemplate] = (),
        extensions: ExtensionHost | None = None,
        warnings: Sequence[str] = (),
    ) -> None:
        self.skills = list(skills)
        self.templates = {t.name: t for t in templates}
        self.extensions = extensions
        self.warnings = list(warnings)

    def commands(self) -> list[CommandInfo]:
        """Extension commands, then templates, then ``skill:NAME`` for each skill."""
        found: list[CommandInfo] = []
        if self.extensions is not None:
            for command in self.extensions.commands().values():
                origin = next(e.origin for e in self.extensions.extensions if e.name == command.extension)
                found.append(CommandInfo(command.name, command.description, "extension", origin, "user"))
        for template in self.templates.values():
            scope = "project" if template.source == "project" else "user"
            found.append(
                CommandInfo(template.name, template.description, "prompt", str(template.path), scope)
            )
        for skill in self.skills:
            info = CommandInfo(
                f"skill:{skill.name}", skill.description, "skill", str(skill.path), skill.scope
            )
            found.append(info)
        return found

    def extension_command(self, line: str) -> tuple[ExtensionCommand, str] | None:
        """``(command, args)`` when ``line`` is ``/NAME args`` of an extension command."""
        parsed = _parse(line)
        if parsed is None or self.extensions is None:
            return None
        command = self.extensions.commands().get(parsed[0])
        return (command, parsed[1]) if command is not None else None

    def expand(self, line: str) -> str | None:
        """The prompt ``/NAME args`` (a template) or ``/skill:NAME args`` stands for; ``None``
        when ``line`` is neither. A skill whose file vanished raises ``ValueError``."""
        parsed = _parse(line)
        if parsed is None:
            return None
        name, args = parsed
        if name.startswith("skill:"):
            skill = next((s for s in self.skills if s.name == name.removeprefix("skill:")), None)
            if skill is None:
                return None
            from tether.session.skills import skill_invocation

            return skill_invocation(skill, args)
        template = self.templates.get(name)
        return template.expand(args) if template is not None else None

    def handles(self, line: str) -> bool:
        """Whether ``line`` is one of these commands (so it is not an unknown built-in one)."""
        return self.extension_command(line) is not None or self._expands(line)

    def _expands(self, line: str) -> bool:
        parsed = _parse(line)
        if parsed is None:
            return False
        name = parsed[0]
        if name.startswith("skill:"):
            return any(s.name == name.removeprefix("skill:") for s in self.skills)
        return name in self.templates

    def skill_folders(self) -> tuple[Path, ...]:
        """The folders of the skills the system prompt lists: the model reads their files when
        a task matches one, so the reading tools may use them wherever they are."""
        return tuple(s.folder for s in self.skills if s.model_invocable)

    def skills_prompt(self) -> str | None:
        if not self.skills:
            return None
        from tether.session.skills import skills_prompt

        return skills_prompt(self.skills)


def _parse(line: str) -> tuple[str, str] | None:
    if not line.startswith("/") or line.startswith("//"):
        return None
    name, _, rest = line[1:].partition(" ")
    return (name.strip(), rest.strip()) if name.strip() else None


def load_resources(
    cwd: Path,
    config_dir: Path,
    settings: Settings,
    *,
    data_dir: Path | None = None,
    extensions: bool = True,
    extension_paths: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
) -> Resources:
    """Find and load what the user's files add to a session in ``cwd`` (see the module docstring).

    Args:
        cwd: The workspace; the project folders are looked for from here up.
        config_dir: tether's user config folder.
        settings: Which skill sources are on (``settings.skills``).
        data_dir: Where the entry-point cache lives (default: tether's data folder).
        extensions: ``False`` (``--no-extensions``): look for no extension; ``extension_paths``
            still load.
        extension_paths: Extensions given for this run (``-e PATH``).
        hidden: Paths no skill or template may resolve to (credentials, tether's files with
            keys), even in the project or the config folder: their text is sent as is.
    """
    warnings: list[str] = []
    project = _ProjectFolders(cwd, config_dir, warnings)
    skills = _skills(project, config_dir, settings, warnings, hidden)
    templates = _templates(project, config_dir, warnings, hidden)
    host = _extensions(project, config_dir, data_dir, extensions, extension_paths, warnings)
    if host is not None:
        warnings.extend(host.problems)
    return Resources(skills, templates, host, warnings)


class _ProjectFolders:
    """The working directory's parents up to the repository root, and its ``.tether`` folder's
    subfolders, each given only when the project is trusted (asked once, and only if needed)."""

    def __init__(self, cwd: Path, config_dir: Path, warnings: list[str]) -> None:
        self.chain = _project_chain(cwd)
        self.roots = (self.chain[-1], config_dir)
        """Where a file found in the project may really lie: the repository and the user's
        config folder, never a link out to the rest of the user's files."""
        self._config_dir = config_dir
        self._warnings = warnings
        self._tether = next((d / ".tether" for d in (cwd, *cwd.parents) if (d / ".tether").is_dir()), None)
        self._granted: Granted | None = None
        self.pinned: dict[Path, dict[str, bytes]] = {}
        """The granted extensions of ``extensions()`` by path, each with the bytes its grant was
        matched on (``tether.session.trust_items.extension_contents``): what is imported."""

    def tether(self, name: Literal["skills", "prompts"]) -> Path | None:
        """``.tether/<name>`` of the nearest project, if it exists and the project was granted
        ``name`` (``tether.session.trust``: each kind on its own)."""
        if self._tether is None or not (self._tether / name).is_dir():
            return None
        if name not in self._grants(self._tether).kinds:
            self._warnings.append(f"{self._tether / name}: ignored: {self._untrusted(self._tether, name)}")
            return None
        return self._tether / name

    def extensions(self) -> list[Path]:
        """The files of the nearest project's ``.tether/extensions`` it was granted as they are
        now (``tether.session.trust_items``: one added or changed since is a new decision)."""
        if self._tether is None or not (folder := self._tether / "extensions").is_dir():
            return []
        from tether.session.extensions.loader import extension_files

        given = self._grants(self._tether)
        if "extensions" in given.kinds:
            return extension_files(folder)
        from tether.session.trust_items import extension_contents

        refused: dict[Path, str] = {}
        found = extension_contents(folder, refused) if given.of("extensions") else {}
        self.pinned = {
            path: files for path, (item, files) in found.items() if given.allows("extensions", item)
        }
        allowed = list(self.pinned)
        self._warnings += [f"{path}: ignored: {why}" for path, why in refused.items()]
        left = [path.name for path in extension_files(folder) if path not in allowed and path not in refused]
        if left:
            what = f"ignored {', '.join(left)}, new or changed since" if allowed else "ignored:"
            self._warnings.append(f"{folder}: {what} {self._untrusted(self._tether, 'extensions')}")
        return allowed

    def _grants(self, tether: Path) -> Granted:
        from tether.session.trust import Granted, TrustFileError, granted

        if self._granted is None:
            try:
                self._granted = granted(self._config_dir, tether.parent)
            except TrustFileError as exc:
                self._warnings.append(str(exc))
                self._granted = Granted()
        return self._granted

    def _untrusted(self, tether: Path, name: str) -> str:
        from tether.session.trust import trust_file

        return (
            f"the project is not trusted with its {name} (run tether interactively there to be "
            f"asked, or add {tether.parent} to {trust_file(self._config_dir)})"
        )


def _project_chain(cwd: Path) -> list[Path]:
    """``cwd`` and its parents up to the one holding ``.git``; only ``cwd`` outside a repository."""
    chain: list[Path] = []
    for directory in (cwd, *cwd.parents):
        chain.append(directory)
        if is_repository(directory):
            return chain
    return [cwd]


_PROJECT: Literal["project"] = "project"
_USER: Literal["user"] = "user"


def _skills(
    project: _ProjectFolders,
    config_dir: Path,
    settings: Settings,
    warnings: list[str],
    hidden: Sequence[Path],
) -> list[Skill]:
    """The user's folders come first: a repository's skill never replaces the user's own skill of
    the same name (it is reported as shadowed instead)."""
    switches = settings.skills
    home = Path.home()
    folders: list[tuple[str, Literal["user", "project"], Path | None]] = [
        ("user", "user", config_dir / "skills" if "user" in switches else None)
    ]
    for source, relative in (
        ("agents", ".agents/skills"),
        ("claude", ".claude/skills"),
        ("pi", ".pi/agent/skills"),
    ):
        if source in switches:
            folders.append((source, _USER, home / relative))
    folders.append(("project", "project", project.tether("skills") if "project" in switches else None))
    for source, relative in (
        ("agents", ".agents/skills"),
        ("claude", ".claude/skills"),
        ("pi", ".pi/skills"),
    ):
        if source in switches:
            folders.extend((source, _PROJECT, directory / relative) for directory in project.chain)
    present: list[tuple[str, Literal["user", "project"], Path]] = [
        (source, scope, folder) for source, scope, folder in folders if folder is not None and folder.is_dir()
    ]
    if not present:
        return []
    from tether.session.skills import read_skills

    chosen: dict[str, Skill] = {}
    seen: set[Path] = set()
    for source, scope, folder in present:
        if folder.resolve() in seen:
            continue  # the home folder is also the project's parent
        seen.add(folder.resolve())
        roots = project.roots if scope == "project" else None
        found, problems = read_skills(folder, source, scope, roots, hidden)
        warnings.extend(problems)
        for skill in found:
            if skill.name in chosen:
                warnings.append(_shadowed(f"skill {skill.name}", skill.path, chosen[skill.name].path))
            else:
                chosen[skill.name] = skill
    return list(chosen.values())


def _shadowed(what: str, path: Path, winner: Path) -> str:
    return f"{path}: {what} is shadowed by {winner} (your own files win over a repository's)"


def _templates(
    project: _ProjectFolders, config_dir: Path, warnings: list[str], hidden: Sequence[Path]
) -> list[PromptTemplate]:
    """The user's templates first, as for skills: a repository never replaces the user's own."""
    home = Path.home()
    folders: list[tuple[str, Path | None, bool]] = [
        ("user", config_dir / "prompts", False),
        ("user", home / ".pi" / "agent" / "prompts", False),
        ("user", home / ".claude" / "commands", True),
        ("project", project.tether("prompts"), False),
    ]
    for directory in project.chain:  # pi's and Claude Code's, as their skills are found
        folders += [
            ("project", directory / ".pi" / "prompts", False),
            ("project", directory / ".claude" / "commands", True),
        ]
    present = [(s, f, nested) for s, f, nested in folders if f is not None and f.is_dir()]
    if not present:
        return []
    from tether.session.templates import read_templates

    chosen: dict[str, PromptTemplate] = {}
    seen: set[Path] = set()
    for source, folder, nested in present:
        if folder.resolve() in seen:
            continue  # the home folder is also the project's parent
        seen.add(folder.resolve())
        roots = project.roots if source == "project" else None
        found, problems = read_templates(folder, source, roots, nested=nested, hidden=hidden)
        warnings.extend(problems)
        for template in found:
            if template.name in chosen:
                warnings.append(_shadowed(f"/{template.name}", template.path, chosen[template.name].path))
            else:
                chosen[template.name] = template
    return list(chosen.values())


def _extensions(
    project: _ProjectFolders,
    config_dir: Path,
    data_dir: Path | None,
    discover: bool,
    extension_paths: Sequence[Path],
    warnings: list[str],
) -> ExtensionHost | None:
    paths: list[Path] = []
    entry_points: list[tuple[str, str]] = []
    if discover:
        user = config_dir / "extensions"
        found = project.extensions()  # the loader is imported only when there is a folder
        if user.is_dir():
            from tether.session.extensions.loader import extension_files

            found = [*extension_files(user), *found]
        names: dict[str, Path] = {}
        for path in found:
            from tether.session.extensions.loader import extension_name

            name = extension_name(path)
            if name in names:  # the user's folder came first: theirs wins
                warnings.append(_shadowed(f"extension {name}", path, names[name]))
                continue
            names[name] = path
            paths.append(path)
        if data_dir is None:
            from tether.ai.paths import data_dir as default_data_dir

            data_dir = default_data_dir()
        entry_points = installed_entry_points(data_dir)
    paths += [Path(os.path.expanduser(p)).absolute() for p in extension_paths]
    if not paths and not entry_points:
        return None
    from tether.session.extensions.loader import load_extensions

    return load_extensions(project.chain[0], paths, entry_points, project.pinned)


# -- installed extensions, without paying for the search on every start ---------------------------
#
# ``importlib.metadata`` takes tens of milliseconds to import and to read every installed
# package's metadata, most of ``tether -p``'s start-up, for a group that is usually empty. So the
# answer is kept in ``<data dir>/extension-entry-points.json`` with the modification times of the
# ``site-packages`` folders on ``sys.path``: installing or removing a package adds or removes its
# ``.dist-info`` folder there, which changes the folder's time, and only then is the search done
# again. (Other folders on the path, such as the current directory, change for unrelated reasons
# and hold no installed metadata.)

ENTRY_POINT_GROUP = "tether.extensions"
ENTRY_POINTS_CACHE = "extension-entry-points.json"


def installed_entry_points(
    data_dir: Path, group: str = ENTRY_POINT_GROUP, cache_name: str = ENTRY_POINTS_CACHE
) -> list[tuple[str, str]]:
    """``(name, "module:attr")`` of every entry point in ``group``, installed order (also for the
    model-spec providers of ``tether.session.model_choice``, each group with its cache file)."""
    stamps = _folder_stamps()
    cache = data_dir / cache_name
    try:
        # read_own_file: a FIFO or a link to /dev/zero in its place blocked every start
        cached = json.loads(read_own_file(cache, None).decode("utf-8"))
        if cached.get("folders") == stamps:
            return [(str(n), str(v)) for n, v in cached["entryPoints"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        pass  # no cache, or a damaged one: search again and rewrite it
    from importlib.metadata import entry_points

    found = [(ep.name, ep.value) for ep in entry_points(group=group)]
    try:
        make_own_folder(data_dir)
        # a new file renamed over it: a link planted at a temporary name is not written through
        write_own_file(cache, [json.dumps({"folders": stamps, "entryPoints": found}).encode()])
    except OSError:
        pass  # a read-only data folder: search again next time
    return found


def _folder_stamps() -> dict[str, int]:
    stamps: dict[str, int] = {}
    for folder in sys.path:
        if os.path.basename(folder) not in ("site-packages", "dist-packages"):
            continue
        try:
            stamps[folder] = os.stat(folder).st_mtime_ns
        except OSError:
            continue
    return stamps
