"""Skills and prompt templates: front matter, discovery from every source, precedence, trust, the
system prompt, and what ``/NAME`` and ``/skill:NAME`` send to the model (real files in a temporary
home, a real ``AgentSession`` on the scripted model)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tether.session.commands import execute, runs_here
from tether.session.factory import SessionChoice, start_session
from tether.session.frontmatter import FrontMatterError, split_front_matter
from tether.session.options import SessionOptions
from tether.session.resources import load_resources
from tether.session.settings import Settings, SettingsError, load_settings
from tether.session.templates import PromptTemplate, split_arguments
from tether.session.trust import trust
from tether.testing.scripted import ScriptedModel


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A user home, tether's config folder and a git project inside the home."""
    home = tmp_path / "user"
    config = tmp_path / "home" / "config"
    project = home / "work" / "repo"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, as git tells one
    config.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return {"home": home, "config": config, "project": project}


def skill(folder: Path, name: str, description: str, body: str = "Do the thing.", **extra: str) -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = "".join(f"{k}: {v}\n" for k, v in extra.items())
    path.write_text(f"---\nname: {name}\ndescription: {description}\n{fields}---\n{body}\n")
    return path


def prompt_file(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text)
    return path


# -- front matter and templates ----------------------------------------------------------------


def test_front_matter_subset() -> None:
    fields, body = split_front_matter(
        '---\nname: a-skill\ndescription: >-\n  Folded over\n  two lines.\nquoted: "say \\"hi\\""\n'
        "single: 'it''s'\nmetadata:\n  author: me\n  version: 1\nplain: x # a comment\n---\n\nBody here.\n"
    )
    assert fields == {
        "name": "a-skill",
        "description": "Folded over two lines.",
        "quoted": 'say "hi"',
        "single": "it's",
        "metadata": "author: me\nversion: 1",
        "plain": "x",
    }
    assert body == "Body here."
    assert split_front_matter("no front matter\n---\n") == ({}, "no front matter\n---\n")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("---\nname: x\n", "never closed"),
        ("---\njust words\n---\n", "line 2: expected `key: value`"),
        ("---\ndescription: 'open\n---\n", "line 2: unterminated"),
        ("---\n  indented: x\n---\n", "line 2: unexpected indentation"),
    ],
)
def test_broken_front_matter_names_the_line(text: str, problem: str) -> None:
    with pytest.raises(FrontMatterError, match=problem):
        split_front_matter(text)


def test_template_placeholders() -> None:
    template = PromptTemplate(
        "t", "", "one=$1 two=$2 three=$3 all=$ARGUMENTS at=$@ rest=${@:2}", Path("t.md"), "user"
    )
    assert template.expand('first "second word" third') == (
        "one=first two=second word three=third all=first second word third "
        "at=first second word third rest=second word third"
    )
    assert template.expand("") == "one= two= three= all= at= rest="
    assert split_arguments("a 'b c' \"d\"") == ["a", "b c", "d"]


PI_REVIEW = """---
description: Review staged git changes
argument-hint: "[focus]"
---
Review the staged changes. Focus on ${1:-correctness, security, and error handling}.
"""
"""pi 1.6's own example (docs/prompt-templates.md), as a user would have it in ~/.pi/agent/prompts."""


@pytest.mark.parametrize(
    ("body", "args", "expected"),
    [
        ("${1:-dflt}|${2:-two}", "a", "a|two"),
        ("${1:-dflt}", '""', "dflt"),  # empty counts as missing, as in the shell
        ("${@:-nothing given}", "", "nothing given"),
        ("${@:-x}", "p q", "p q"),
        ("${@:2}", "a b c d", "b c d"),
        ("${@:2:2}", "a b c d", "b c"),
        ("${@:3:5}", "a b c d", "c d"),
        ("$1 $ARGUMENTS", "one two", "one one two"),
        ("[$1]", "doesn't matter", "[doesn't]"),  # a quote inside a word is text
        ("[$1][$2]", "'unclosed here", "['unclosed][here]"),
        ("[$1]", r'"the \"fast\" path"', '[the "fast" path]'),
        ("$10|$1", "a b c d e f g h i j", "j|a"),
    ],
)
def test_pi_template_substitutions(body: str, args: str, expected: str) -> None:
    assert PromptTemplate("t", "", body, Path("t.md"), "user").expand(args) == expected


def test_pi_and_claude_code_template_folders(dirs: dict[str, Path]) -> None:
    home, config, project = dirs["home"], dirs["config"], dirs["project"]
    prompt_file(home / ".pi" / "agent" / "prompts", "review", PI_REVIEW)
    prompt_file(project / ".pi" / "prompts", "plan", "Plan $@")
    prompt_file(project / ".claude" / "commands" / "frontend", "component", "Make a $1 component")
    prompt_file(home / ".claude" / "commands", "fixissue", "Fix issue #$ARGUMENTS")
    prompt_file(home / ".pi" / "agent" / "prompts" / "nested", "ignored", "pi reads direct children only")
    below = project / "src"
    below.mkdir()

    resources = load_resources(below, config, Settings(), extensions=False)

    assert sorted(resources.templates) == ["component", "fixissue", "plan", "review"]
    assert resources.templates["review"].description == "Review staged git changes"
    assert resources.expand("/review") == (
        "Review the staged changes. Focus on correctness, security, and error handling."
    )
    assert (
        resources.expand('/review "API compatibility"')
        == "Review the staged changes. Focus on API compatibility."
    )
    assert resources.expand("/component button") == "Make a button component"
    assert resources.expand("/fixissue 123") == "Fix issue #123"
    assert resources.expand("/plan the move") == "Plan the move"


def test_skills_in_grouping_folders_are_found(dirs: dict[str, Path]) -> None:
    home, config, project = dirs["home"], dirs["config"], dirs["project"]
    skill(home / ".pi" / "agent" / "skills" / "docs", "pdf", "fill PDF forms")
    skill(project / ".claude" / "skills" / "team" / "backend", "migrations", "write migrations")
    inner = skill(project / ".claude" / "skills", "outer", "a skill with a folder of its own")
    skill(inner.parent / "examples", "not-a-skill", "a skill's own files are not more skills")
    skill(project / ".agents" / "skills" / "node_modules", "vendored", "never looked at")

    resources = load_resources(project, config, Settings(), extensions=False)

    assert sorted(s.name for s in resources.skills) == ["migrations", "outer", "pdf"]


# -- discovery ---------------------------------------------------------------------------------


def test_skills_from_every_source_with_precedence(dirs: dict[str, Path]) -> None:
    home, config, project = dirs["home"], dirs["config"], dirs["project"]
    trust(config, project)
    skill(project / ".tether" / "skills", "common", "from the project's .tether")
    skill(project / ".agents" / "skills", "common", "from the project's .agents")
    skill(project / ".agents" / "skills", "p-agents", "project agents")
    skill(project.parent / ".claude" / "skills", "outside-repo", "above the repository root")
    skill(project / ".claude" / "skills", "p-claude", "project claude")
    skill(project / ".pi" / "skills", "p-pi", "project pi")
    skill(config / "skills", "common", "from the user's config")
    skill(config / "skills", "u-tether", "user tether")
    skill(home / ".agents" / "skills", "u-agents", "user agents")
    skill(home / ".claude" / "skills", "u-claude", "user claude")
    skill(home / ".pi" / "agent" / "skills", "u-pi", "user pi")

    resources = load_resources(project, config, Settings(), extensions=False)

    found = {s.name: (s.description, s.source, s.scope) for s in resources.skills}
    assert found == {
        "common": ("from the user's config", "user", "user"),  # a repository never replaces it
        "p-agents": ("project agents", "agents", "project"),
        "p-claude": ("project claude", "claude", "project"),
        "p-pi": ("project pi", "pi", "project"),
        "u-tether": ("user tether", "user", "user"),
        "u-agents": ("user agents", "agents", "user"),
        "u-claude": ("user claude", "claude", "user"),
        "u-pi": ("user pi", "pi", "user"),
    }
    shadowed = [w for w in resources.warnings if "shadowed" in w]
    assert len(shadowed) == 2 and all("skill common" in w for w in shadowed)
    assert all(str(config / "skills") in w and "your own files win" in w for w in shadowed)


def test_each_skill_source_can_be_switched_off(dirs: dict[str, Path]) -> None:
    home, config, project = dirs["home"], dirs["config"], dirs["project"]
    trust(config, project)
    skill(project / ".tether" / "skills", "a", "tether project")
    skill(project / ".agents" / "skills", "b", "agents")
    skill(home / ".claude" / "skills", "c", "claude")
    skill(project / ".pi" / "skills", "d", "pi")
    skill(config / "skills", "e", "user")
    (config / "settings.json").write_text(json.dumps({"skills": {"claude": False, "pi": False}}))
    settings = load_settings(config, project)
    assert settings.skills == {"user", "project", "agents"}
    names = [s.name for s in load_resources(project, config, settings, extensions=False).skills]
    assert names == ["e", "a", "b"]  # the user's own first
    off = replace(settings, skills=frozenset[str]())
    assert load_resources(project, config, off, extensions=False).skills == []


def test_bad_skills_setting_is_one_clear_line(dirs: dict[str, Path]) -> None:
    (dirs["config"] / "settings.json").write_text(json.dumps({"skills": {"cursor": True}}))
    with pytest.raises(SettingsError, match=r'"skills.cursor": unknown source'):
        load_settings(dirs["config"], dirs["project"])


def test_an_untrusted_project_tether_folder_is_left_out_and_said_so(dirs: dict[str, Path]) -> None:
    config, project = dirs["config"], dirs["project"]
    skill(project / ".tether" / "skills", "secret", "from an untrusted repository")
    prompt_file(project / ".tether" / "prompts", "deploy", "Deploy now")
    skill(project / ".claude" / "skills", "visible", "the other agents' folders still load")

    resources = load_resources(project, config, Settings(), extensions=False)

    assert [s.name for s in resources.skills] == ["visible"]
    assert resources.templates == {}
    ignored = [w for w in resources.warnings if "not trusted" in w]
    assert [w.split(":")[0] for w in ignored] == [
        str(project / ".tether" / "skills"),
        str(project / ".tether" / "prompts"),
    ]


def test_invalid_front_matter_warns_with_the_file_and_the_rest_loads(dirs: dict[str, Path]) -> None:
    config = dirs["config"]
    good = skill(config / "skills", "good", "works")
    broken = config / "skills" / "broken" / "SKILL.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("---\nname: broken\ndescription: 'never closed\n---\n")
    nameless = skill(config / "skills", "Bad_Name", "bad name")
    undescribed = config / "skills" / "quiet" / "SKILL.md"
    undescribed.parent.mkdir(parents=True)
    undescribed.write_text("---\nname: quiet\n---\nbody\n")
    mismatch = skill(config / "skills", "folder-a", "named differently")
    mismatch.write_text("---\nname: other-name\ndescription: named differently\n---\n")

    resources = load_resources(dirs["project"], config, Settings(), extensions=False)

    assert sorted(s.name for s in resources.skills) == ["good", "other-name"]
    assert {s.path for s in resources.skills} == {good, mismatch}
    warned = {w.split(": ")[0]: w for w in resources.warnings}
    assert set(warned) == {str(broken), str(nameless), str(undescribed), str(mismatch)}
    assert "invalid front matter (line 3: unterminated" in warned[str(broken)]
    assert 'no "description"' in warned[str(undescribed)]


def test_templates_the_users_own_win_over_the_projects(dirs: dict[str, Path]) -> None:
    config, project = dirs["config"], dirs["project"]
    trust(config, project)
    prompt_file(config / "prompts", "review", "---\ndescription: user review\n---\nReview $1")
    prompt_file(config / "prompts", "explain", "# Explain the code\nExplain $ARGUMENTS")
    prompt_file(
        project / ".tether" / "prompts",
        "review",
        "---\ndescription: project review\n---\nProject review of $1",
    )
    prompt_file(config / "prompts", "bad name!", "x")

    resources = load_resources(project, config, Settings(), extensions=False)

    assert {n: t.description for n, t in resources.templates.items()} == {
        "review": "user review",
        "explain": "Explain the code",
    }
    assert resources.expand("/review main.py") == "Review main.py"
    assert resources.expand("/explain the parser") == "# Explain the code\nExplain the parser"
    assert resources.expand("/unknown x") is None
    assert any("review.md: /review is shadowed by" in w for w in resources.warnings)
    assert any("'bad name!' cannot be a command name" in w for w in resources.warnings)
    listed = [(c.name, c.source, c.scope) for c in resources.commands()]
    assert listed == [("explain", "prompt", "user"), ("review", "prompt", "user")]


# -- in a session ------------------------------------------------------------------------------


def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *texts: str) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"content": [{"type": "text", "chunks": [t]}]} for t in texts]))
    monkeypatch.setenv("TETHER_SCRIPTED", str(path))


def sent(core: Any) -> list[str]:
    """The text of the last user message of each model request."""
    model: ScriptedModel = core.agent.stream_fn
    out: list[str] = []
    for request in model.requests:
        users = [m for m in request.context["messages"] if m["role"] == "user"]
        content = users[-1]["content"]
        out.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return out


async def test_templates_and_skills_in_a_session(
    dirs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, project = dirs["config"], dirs["project"]
    monkeypatch.setenv("TETHER_HOME", str(config.parent))
    scripted(tmp_path, monkeypatch, "one", "two", "three")
    prompt_file(config / "prompts", "review", "---\ndescription: Review a file\n---\nReview $1 carefully")
    path = skill(config / "skills", "release", "Cut a release", body="1. Bump the version.\n2. Tag it.")
    skill(config / "skills", "hidden", "only by command", **{"disable-model-invocation": "true"})

    core = start_session(
        SessionOptions(), cwd=project, settings=Settings(), ask=None, session=SessionChoice(persist=False)
    )
    try:
        prompt = core.agent.system_prompt
        assert "<name>release</name>" in prompt and "<description>Cut a release</description>" in prompt
        assert f"<location>{path}</location>" in prompt
        assert (
            "<name>hidden<" not in prompt and "Bump the version" not in prompt
        )  # names only, never contents

        assert not runs_here(core, "/review a.py") and runs_here(core, "/model") and runs_here(core, "/nope")
        await core.submit("/review a.py")
        await core.submit("/skill:release for 2.0")
        await core.submit("/skill:hidden")
        help_text = (await execute(core, "/help")).text
    finally:
        await core.close()
    first, second, third = sent(core)
    assert first == "Review a.py carefully"
    assert second.startswith(f'<skill name="release" location="{path}">')
    assert "1. Bump the version.\n2. Tag it.\n</skill>\n\nfor 2.0" in second
    assert f"References are relative to {path.parent}." in second
    assert third.startswith('<skill name="hidden"')
    assert "/review" in help_text and "Review a file" in help_text and "/skill:release" in help_text


def test_no_user_files_load_nothing_new(tmp_path: Path) -> None:
    """Without skills, templates or extensions, neither the parsers nor the extension machinery
    load; the entry-point search runs once, later starts read its cached answer."""
    import subprocess
    import sys

    code = (
        "import sys, pathlib\n"
        "from tether.session.resources import load_resources\n"
        "from tether.session.settings import Settings\n"
        f"r = load_resources(pathlib.Path({str(tmp_path)!r}), pathlib.Path({str(tmp_path / 'cfg')!r}), "
        f"Settings(), data_dir=pathlib.Path({str(tmp_path / 'data')!r}))\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    env = {
        "HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(Path(__file__).parents[2] / "src"),
    }
    runs = [
        set(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
            ).stdout.split()
        )
        for _ in range(2)
    ]
    assert "importlib.metadata" in runs[0]  # the first start searches the installed packages
    heavy = {"tether.session.frontmatter", "tether.session.skills", "tether.session.templates", "yaml"}
    heavy |= {"tether.session.extensions.loader", "tether.session.extensions.host", "importlib.metadata"}
    assert heavy & runs[1] == set()


async def test_a_skill_whose_file_went_away_is_one_notice(
    dirs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = dirs["config"]
    monkeypatch.setenv("TETHER_HOME", str(config.parent))
    scripted(tmp_path, monkeypatch, "unused")
    path = skill(config / "skills", "gone", "Soon deleted")
    core = start_session(
        SessionOptions(),
        cwd=dirs["project"],
        settings=Settings(),
        ask=None,
        session=SessionChoice(persist=False),
    )
    notices: list[str] = []
    core.subscribe(lambda e: notices.append(e["message"]) if e["type"] == "notice" else None)
    try:
        path.unlink()
        assert await core.submit("/skill:gone now") == []
    finally:
        await core.close()
    assert len(notices) == 1 and notices[0].startswith(f"skill gone: cannot read {path}")
    assert sent(core) == []  # no model call


def test_a_repositorys_skill_or_template_linking_out_is_refused(
    dirs: dict[str, Path], tmp_path: Path
) -> None:
    config, project = dirs["config"], dirs["project"]
    trust(config, project)
    elsewhere = skill(tmp_path / "elsewhere", "stolen", "looks like a skill", body="PRIVATE NOTES")
    linked = project / ".agents" / "skills" / "stolen"
    linked.parent.mkdir(parents=True)
    linked.symlink_to(elsewhere.parent)
    (project / ".tether" / "prompts").mkdir(parents=True)
    (project / ".tether" / "prompts" / "env.md").symlink_to("/proc/self/environ")
    inside = skill(project / "docs", "kept", "a skill elsewhere in the repository")
    (project / ".claude" / "skills").mkdir(parents=True)
    (project / ".claude" / "skills" / "kept").symlink_to(inside.parent)

    resources = load_resources(project, config, Settings(), extensions=False)

    assert [s.name for s in resources.skills] == ["kept"]
    assert "env" not in resources.templates
    warnings = "\n".join(resources.warnings)
    assert f"resolves through a symbolic link to {elsewhere}" in warnings
    assert "env.md: cannot read: resolves to /proc/" in warnings
    assert "PRIVATE NOTES" not in warnings


def _serve_token_in_config(
    dirs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path]:
    """The user's config folder (its settings.json holding the serve token) and the project."""
    config, project = dirs["config"], dirs["project"]
    monkeypatch.setenv("TETHER_HOME", str(config.parent))
    scripted(tmp_path, monkeypatch, "unused")
    (config / "settings.json").write_text('{"serve": {"token": "SERVE-TOKEN-SECRET"}}')
    return config, project


async def test_a_repositorys_template_linking_to_the_users_keys_is_refused(
    dirs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the config folder is a place a project's file may link to (for the user's own prompts),
    # but its settings.json holds the serve token: as /review, it went to the model as is
    config, project = _serve_token_in_config(dirs, tmp_path, monkeypatch)
    (project / ".pi" / "prompts").mkdir(parents=True)
    (project / ".pi" / "prompts" / "review.md").symlink_to(config / "settings.json")
    (project / ".pi" / "prompts" / "ship.md").write_text("ship it")
    core = start_session(
        SessionOptions(), cwd=project, settings=Settings(), ask=None, session=SessionChoice(persist=False)
    )
    try:
        assert core.resources is not None
        assert sorted(core.resources.templates) == ["ship"]
        warnings = "\n".join(core.resources.warnings)
        assert "review.md: cannot read: resolves to" in warnings and "tether's keys" in warnings
    finally:
        await core.close()


async def test_a_repositorys_skill_later_linking_to_the_users_keys_is_refused(
    dirs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # found as a plain file at the start, the skill becomes a link to the serve token's file:
    # the next /skill:NAME read it again, under the roots only, and sent it to the model
    config, project = _serve_token_in_config(dirs, tmp_path, monkeypatch)
    path = skill(project / ".pi" / "skills", "x", "Does x")
    core = start_session(
        SessionOptions(), cwd=project, settings=Settings(), ask=None, session=SessionChoice(persist=False)
    )
    try:
        assert core.resources is not None
        assert [s.name for s in core.resources.skills] == ["x"]
        path.unlink()
        path.symlink_to(config / "settings.json")
        with pytest.raises(ValueError, match="tether's keys") as refused:
            core.resources.expand("/skill:x")
        assert "SERVE-TOKEN-SECRET" not in str(refused.value)
    finally:
        await core.close()


def test_a_repositorys_extension_never_replaces_the_users(dirs: dict[str, Path]) -> None:
    config, project = dirs["config"], dirs["project"]
    trust(config, project)
    for folder, word in ((config / "extensions", "user"), (project / ".tether" / "extensions", "project")):
        folder.mkdir(parents=True)
        (folder / "helper.py").write_text(
            f"def setup(api):\n    api.register_command('who', lambda args, ctx: {word!r}, description={word!r})\n"
        )
    resources = load_resources(project, config, Settings(), data_dir=dirs["home"] / "data")
    assert resources.extensions is not None
    assert [e.origin for e in resources.extensions.extensions] == [str(config / "extensions" / "helper.py")]
    assert any(
        "extension helper is shadowed by" in w and "your own files win" in w for w in resources.warnings
    )
