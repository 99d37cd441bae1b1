"""``mcpServers`` files: the shape users have, ``${VAR}`` expansion, precedence, trust, errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tether.mcp import McpConfigError, load_mcp_servers, tool_name
from tether.session.trust import TrustFileError, is_trusted


def write(path: Path, servers: dict[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_variables_expand_in_every_string_and_defaults_apply(tmp_path: Path) -> None:
    write(
        tmp_path / "user" / "mcp.json",
        {
            "s": {
                "command": "${BIN}/server",
                "args": ["--key", "${KEY}"],
                "env": {"A": "${NOPE:-fallback}"},
                "cwd": "sub",
            },
            "h": {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${KEY}"}},
        },
    )
    env = {"BIN": "/opt", "KEY": "k1", "HOST": "example.com"}
    s, h = load_mcp_servers(tmp_path, user_dir=tmp_path / "user", trusted=False, env=env)
    assert (s.command, s.args, dict(s.env), s.cwd) == (
        "/opt/server",
        ("--key", "k1"),
        {"A": "fallback"},
        tmp_path / "user" / "sub",
    )
    assert (h.transport, h.url, dict(h.headers)) == (
        "http",
        "https://example.com/mcp",
        {"Authorization": "Bearer k1"},
    )


def test_later_files_win_disabled_servers_are_dropped_and_untrusted_projects_ignored(tmp_path: Path) -> None:
    write(tmp_path / "user" / "mcp.json", {"a": {"command": "user-a"}, "b": {"command": "user-b"}})
    write(
        tmp_path / "p" / ".mcp.json", {"a": {"command": "project-a"}, "b": {"command": "x", "enabled": False}}
    )
    extra = write(tmp_path / "extra.json", {"c": {"url": "http://127.0.0.1:1/mcp"}})
    trusted = load_mcp_servers(
        tmp_path / "p", user_dir=tmp_path / "user", config_file=extra, trusted=True, env={}
    )
    assert [(s.name, s.source, s.command or s.url) for s in trusted] == [
        ("a", "project", "project-a"),
        ("c", "file", "http://127.0.0.1:1/mcp"),
    ]
    untrusted = load_mcp_servers(tmp_path / "p", user_dir=tmp_path / "user", trusted=False, env={})
    assert [(s.name, s.command) for s in untrusted] == [("a", "user-a"), ("b", "user-b")]


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        (
            {"s": {"command": "x", "env": {"T": "${MISSING}"}}},
            "'env.T': environment variable MISSING is not set",
        ),
        ({"s": {"args": ["x"]}}, "give either a 'command' or a 'url'"),
        ({"s": {"command": "x", "url": "http://h"}}, "give either a 'command' or a 'url'"),
        ({"s": {"command": "x", "args": "one"}}, "'args' must be a list of strings"),
        ({"s": {"command": "x", "enabled": "no"}}, "'enabled' must be true or false"),
        ({"s": {"url": "http://h", "type": "ws"}}, "type 'ws' is not supported (use stdio, http or sse)"),
        ({"s": {"command": "x", "type": "sse"}}, "type 'sse' needs a 'url'"),
        ({"s": {"command": "x", "timeout": 0}}, "'timeout' must be a positive number of seconds"),
        ({"a/b": {"command": "x"}}, "no '/'"),
        ({"s": {"command": "x", "env": {"A=B": "1"}}}, "server 's': 'env' key 'A=B' is not an environment"),
        ({"s": {"command": "x", "env": {"": "1"}}}, "server 's': 'env' key '' is not an environment"),
        ({"s": {"command": "x", "env": {"A": "a\u0000b"}}}, "server 's': 'env.A' has a NUL character"),
    ],
)
def test_a_bad_entry_is_one_message_naming_the_file(
    tmp_path: Path, servers: dict[str, object], message: str
) -> None:
    path = write(tmp_path / "mcp.json", servers)
    with pytest.raises(McpConfigError) as caught:
        load_mcp_servers(tmp_path, user_dir=tmp_path, trusted=False, env={})
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"{path}: ")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('{"command": "x", "type": ["stdio"]}', "type ['stdio'] is not supported"),
        ('{"url": "http://h", "type": {}}', "type {} is not supported"),
        (
            '{"command": "x", "cwd": "~no-such-user-here/work"}',
            "'cwd' '~no-such-user-here/work': no such user",
        ),
        ('{"command": "x", "timeout": 1' + "0" * 400 + "}", "'timeout' must be a positive number"),
        ('{"command": "x", "startupTimeout": 1e400}', "'startupTimeout' must be a positive number"),
        ('{"command": "x", "timeout": NaN}', "'timeout' must be a positive number"),
    ],
)
def test_a_value_the_reader_could_not_take_is_one_skipped_entry(
    tmp_path: Path, entry: str, message: str
) -> None:
    """A list as ``type`` (unhashable), ``~nobody`` as ``cwd``, a timeout past a float: each
    raised out of the reader (a traceback, every server of every file gone); ``NaN`` failed the
    server's start with "deadline must not be NaN". Each is now the entry's one line."""
    path = tmp_path / "mcp.json"
    path.write_text(f'{{"mcpServers": {{"bad": {entry}, "good": {{"command": "ok"}}}}}}')
    problems: list[str] = []
    servers = load_mcp_servers(tmp_path, user_dir=tmp_path, trusted=False, env={}, problems=problems)
    assert [s.name for s in servers] == ["good"]
    [line] = problems
    assert line.startswith(f"{path}: server 'bad': ") and message in line and line.endswith("(skipped)")


def test_invalid_json_names_the_line_and_column(tmp_path: Path) -> None:
    """A file written on one line (``jq -c``, a generator) was "at line 1" whatever the place."""
    (tmp_path / "mcp.json").write_text('{"mcpServers": {\n  "a": }')
    with pytest.raises(McpConfigError, match=r"mcp.json: invalid JSON at line 2 column 8: Expecting value$"):
        load_mcp_servers(tmp_path, user_dir=tmp_path, trusted=False, env={})
    (tmp_path / "mcp.json").write_text('{"mcpServers": {"a": {"command": "x"}, "b": }}')
    with pytest.raises(McpConfigError, match=r"mcp.json: invalid JSON at line 1 column 45: Expecting value$"):
        load_mcp_servers(tmp_path, user_dir=tmp_path, trusted=False, env={})


def test_trust_covers_the_listed_folder_only(tmp_path: Path) -> None:
    """Not the projects below it: a command run in the trusted folder can write their files."""
    project = tmp_path / "work" / "repo"
    project.mkdir(parents=True)
    assert not is_trusted(tmp_path, project)
    (tmp_path / "trusted-folders.json").write_text(json.dumps([str(tmp_path / "work")]))
    assert is_trusted(tmp_path, project.parent)
    assert not is_trusted(tmp_path, project) and not is_trusted(tmp_path, tmp_path)
    (tmp_path / "trusted-folders.json").write_text("not json")
    with pytest.raises(TrustFileError, match=r"trusted-folders\.json: not valid JSON"):
        is_trusted(tmp_path, project)  # one line naming the file, never a silent "trusted"


@pytest.mark.parametrize(
    ("target", "why"), [("moved.json", "No such file"), ("trusted-folders.json", "Too many levels")]
)
def test_a_trust_file_linking_to_nothing_is_an_error_not_no_trust(
    tmp_path: Path, target: str, why: str
) -> None:
    """A link whose target moved (or a loop) is not "no file": read as one, every project's
    trust was silently dropped, and the next "yes" wrote a new file over the link."""
    project = tmp_path / "repo"
    project.mkdir()
    (tmp_path / "trusted-folders.json").symlink_to(tmp_path / target)
    with pytest.raises(TrustFileError, match=rf"trusted-folders\.json: cannot read: {why}"):
        is_trusted(tmp_path, project)


def test_tool_names_stay_within_what_providers_accept() -> None:
    assert tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert tool_name("fs", "read.file v2") == "mcp__fs__read_file_v2"
    long_a, long_b = tool_name("server", "x" * 80 + "a"), tool_name("server", "x" * 80 + "b")
    assert len(long_a) == len(long_b) == 64 and long_a != long_b


def test_bad_entries_are_reported_once_each_and_the_rest_are_kept(tmp_path: Path) -> None:
    """A config copied from Claude Code: an SSE server, a dotted name, an unset variable, a
    disabled entry of another tool's shape, a bad project file; the good servers survive."""
    user = write(
        tmp_path / "user" / "mcp.json",
        {
            "time": {"command": "uvx", "args": ["mcp-server-time"]},
            "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {"X": "${TOKEN:-none}"}},
            "my.docs": {"url": "http://127.0.0.1:9/mcp"},
            "github": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
            "old": {"transport": "websocket", "enabled": False},
            "broken": {"command": "x", "args": "not a list"},
        },
    )
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / ".mcp.json").write_text("{not json")
    problems: list[str] = []
    servers = load_mcp_servers(
        tmp_path / "p", user_dir=tmp_path / "user", trusted=True, env={}, problems=problems
    )
    assert [(s.name, s.transport) for s in servers] == [
        ("time", "stdio"),
        ("legacy", "sse"),
        ("my.docs", "http"),
    ]
    assert servers[1].headers == {"X": "none"} and servers[2].slug == "my_docs"
    assert problems == [
        f"{user}: server 'github': 'env.GITHUB_TOKEN': environment variable GITHUB_TOKEN is not set (skipped)",
        f"{user}: server 'broken': 'args' must be a list of strings (skipped)",
        f"{tmp_path / 'p' / '.mcp.json'}: invalid JSON at line 1 column 2: Expecting property name enclosed in "
        "double quotes (its servers are skipped)",
    ]


def test_the_project_file_is_found_from_a_subfolder(tmp_path: Path) -> None:
    write(tmp_path / "repo" / ".mcp.json", {"p": {"command": "project-server"}})
    below = tmp_path / "repo" / "src" / "pkg"
    below.mkdir(parents=True)
    found = load_mcp_servers(below, user_dir=tmp_path / "user", trusted=True, env={})
    assert [(s.name, s.source) for s in found] == [("p", "project")]
    assert load_mcp_servers(below, user_dir=tmp_path / "user", trusted=False, env={}) == []


def test_oauth_applies_to_http_servers_without_an_authorization_header() -> None:
    from tether.mcp.config import McpServerConfig, server_config

    def config(entry: dict[str, object]) -> McpServerConfig:
        return server_config("s", entry, source="user", env={"SECRET": "s3"})

    assert config({"url": "https://x/mcp"}).uses_oauth
    assert not config({"url": "https://x/mcp", "headers": {"authorization": "Bearer t"}}).uses_oauth
    assert not config({"url": "https://x/mcp", "oauth": False}).uses_oauth
    assert not config({"command": "srv"}).uses_oauth
    given = config(
        {
            "url": "https://x/mcp",
            "oauth": {"clientId": "c", "clientSecret": "${SECRET}", "callbackPort": 8765},
        }
    )
    assert given.oauth.client_secret == "s3" and given.oauth.callback_port == 8765
    assert "s3" not in repr(given)  # the secret stays out of reprs (and so of logs)
    with pytest.raises(McpConfigError, match="'oauth' has unknown keys: clientID"):
        config({"url": "https://x/mcp", "oauth": {"clientID": "c"}})
    with pytest.raises(McpConfigError, match=r"'oauth\.callbackPort' must be a port number"):
        config({"url": "https://x/mcp", "oauth": {"callbackPort": 70000}})


def _damage(path: Path, how: str, outside: Path) -> None:
    """``path`` made into what a cloned repository (or a careless link) can leave there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if how == "a FIFO":
        os.mkfifo(path)
    elif how == "a link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif how == "a link out of the project":
        outside.write_text(json.dumps({"mcpServers": {"stolen": {"command": "sk-SECRET"}}}))
        path.symlink_to(outside)
    else:  # a sparse 1 GB file: costs no disk, filled memory when read
        with path.open("wb") as file:
            file.write(b'{"mcpServers": {}}')
            file.truncate(1 << 30)


DAMAGE = ["a FIFO", "a link to /dev/zero", "a link out of the project", "a huge file"]
REFUSED = {
    "a FIFO": "not a regular file (a pipe, socket or device)",
    "a link to /dev/zero": "resolves to /dev/zero, a system file (/proc, /sys, /dev), not read",
    "a link out of the project": "resolves through a symbolic link to",
    "a huge file": "larger than 1 MB, not read",
}


@pytest.mark.parametrize("how", DAMAGE)
def test_a_trusted_projects_mcp_file_is_read_as_context_files_are(tmp_path: Path, how: str) -> None:
    """A trusted ``.mcp.json`` was read with ``read_bytes``: a FIFO was passed over in silence
    (or, swapped in after the check, blocked the start), ``/dev/zero`` or a sparse 1 GB file
    filled memory, and a link out of the project had its servers started (and shown by the trust
    prompt). Each is now one line, and the user's servers still come."""
    write(tmp_path / "user" / "mcp.json", {"mine": {"command": "my-server"}})
    project = tmp_path / "p" / ".mcp.json"
    _damage(project, how, tmp_path / "elsewhere.json")
    problems: list[str] = []
    servers = load_mcp_servers(
        tmp_path / "p", user_dir=tmp_path / "user", trusted=True, env={}, problems=problems
    )
    assert [s.name for s in servers] == ["mine"]
    [line] = problems
    assert line.startswith(f"{project}: cannot read: {REFUSED[how]}") and "SECRET" not in line
    assert line.endswith("(its servers are skipped)")


@pytest.mark.parametrize("how", ["a FIFO", "a link to /dev/zero", "a huge file"])
def test_the_users_mcp_file_gets_the_special_file_and_size_checks(tmp_path: Path, how: str) -> None:
    user = tmp_path / "user" / "mcp.json"
    _damage(user, how, tmp_path / "elsewhere.json")
    write(tmp_path / "p" / ".mcp.json", {"proj": {"command": "project-server"}})
    problems: list[str] = []
    servers = load_mcp_servers(
        tmp_path / "p", user_dir=tmp_path / "user", trusted=True, env={}, problems=problems
    )
    assert [s.name for s in servers] == ["proj"]
    assert problems == [f"{user}: cannot read: {REFUSED[how]} (its servers are skipped)"]


def test_the_users_mcp_file_may_link_into_a_dotfiles_folder(tmp_path: Path) -> None:
    real = write(tmp_path / "dotfiles" / "mcp.json", {"mine": {"command": "my-server"}})
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "mcp.json").symlink_to(real)
    servers = load_mcp_servers(tmp_path, user_dir=tmp_path / "user", trusted=False, env={})
    assert [s.name for s in servers] == ["mine"]


def test_the_named_file_may_be_a_pipe_and_a_missing_one_still_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--mcp-config <(...)`` names a pipe (``/dev/fd/63``), as docs/mcp.md says it may: the
    check that the file exists asked whether it was a regular file, so a pipe was "no such
    file" and the run stopped. A relative ``cwd`` in it is the current folder's: it was the
    pipe's folder's (``/dev/fd/sub``)."""
    import threading

    pipe = tmp_path / "pipes" / "servers.fifo"
    pipe.parent.mkdir()
    os.mkfifo(pipe)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)

    def feed() -> None:
        with pipe.open("w") as writer:
            writer.write(json.dumps({"mcpServers": {"piped": {"command": "piped-server", "cwd": "sub"}}}))

    feeding = threading.Thread(target=feed, daemon=True)
    feeding.start()
    found = load_mcp_servers(tmp_path, user_dir=tmp_path / "user", config_file=pipe, trusted=False, env={})
    feeding.join(5)
    assert [(s.name, s.command, s.cwd) for s in found] == [("piped", "piped-server", tmp_path / "sub")]
    with pytest.raises(McpConfigError, match="no such file"):
        load_mcp_servers(
            tmp_path, user_dir=tmp_path / "user", config_file=tmp_path / "gone.json", trusted=False
        )
