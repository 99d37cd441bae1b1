"""System prompt: base text, tools, project instruction files outermost first, settings."""

from __future__ import annotations

from pathlib import Path

from tether.session.system_prompt import BASE_PROMPT, build_system_prompt, context_files


def test_context_files_outermost_first_and_agents_md_preferred(tmp_path: Path) -> None:
    inner = tmp_path / "repo" / "pkg"
    inner.mkdir(parents=True)
    (tmp_path / "repo" / "AGENTS.md").write_text("repo rules")
    (tmp_path / "repo" / "CLAUDE.md").write_text("ignored: AGENTS.md wins in the same folder")
    (inner / "CLAUDE.md").write_text("package rules")
    found = [p for p in context_files(inner) if tmp_path in p.parents]
    assert found == [tmp_path / "repo" / "AGENTS.md", inner / "CLAUDE.md"]
    prompt = build_system_prompt(inner, [("read", "Read a file.\nMore.")], append="extra words")
    assert prompt.startswith(BASE_PROMPT)
    assert "- read: Read a file." in prompt and "More." not in prompt
    assert prompt.index("repo rules") < prompt.index("package rules")
    assert "ignored" not in prompt
    assert prompt.endswith("extra words")
    assert f"Working directory: {inner}" in prompt


def test_replace_and_no_tools(tmp_path: Path) -> None:
    prompt = build_system_prompt(tmp_path, [], replace="You are terse.")
    assert prompt.startswith("You are terse.")
    assert BASE_PROMPT not in prompt
    assert "no tools" in prompt
