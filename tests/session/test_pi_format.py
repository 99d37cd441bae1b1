"""The mapping between pi's session entries and tether's (``tether.session.pi_format``/``pi_files``),
on files in pi's documented format (``docs/session-format.md`` of pi 1.6.0). The same code is
checked against pi's own SessionManager in ``test_pi_sessions.py``."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tether.session import SessionManager
from tether.session.export_html import write_html
from tether.session.pi_files import export_pi_session, import_pi_session, read_pi_session
from tether.session.pi_format import from_pi_entry, iso_timestamp, ms_timestamp, pi_tree, to_pi_entry
from tether.store.jsonl import ImportFormatError

HEADER = {"type": "session", "version": 3, "id": "s-1", "timestamp": "2024-12-03T14:00:00.000Z", "cwd": "/p"}


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _entry(entry_type: str, entry_id: str, parent: str | None, **fields: Any) -> dict[str, Any]:
    return {
        "type": entry_type,
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2024-12-03T14:00:01.500Z",
        **fields,
    }


def test_timestamps_match_javascripts_iso_strings() -> None:
    assert iso_timestamp(1733234400000) == "2024-12-03T14:00:00.000Z"
    assert iso_timestamp(1733234401007) == "2024-12-03T14:00:01.007Z"
    assert ms_timestamp("2024-12-03T14:00:01.007Z") == 1733234401007
    assert ms_timestamp("not a time") == 0


def test_entries_pi_lacks_travel_as_custom_entries_and_come_back() -> None:
    tier = {
        "type": "service_tier_change",
        "id": "T1",
        "parentId": None,
        "timestamp": 5,
        "serviceTier": "flex",
    }
    as_pi = to_pi_entry(tier)
    assert as_pi == {
        "type": "custom",
        "id": "T1",
        "parentId": None,
        "timestamp": iso_timestamp(5),
        "customType": "tether.service_tier_change",
        "data": {"serviceTier": "flex"},
    }
    assert from_pi_entry(as_pi, "T1", {}) == {**tier, "piId": "T1"}
    usage = _entry("usage", "u1", "m1", kind="cache_warm", provider="p", model="m", usage={"input": 1})
    kept = from_pi_entry(usage, "X", {"m1": "M"})
    assert (kept["type"], kept["customType"], kept["parentId"]) == ("custom", "pi.usage", "M")
    assert to_pi_entry(kept, {"X": "u1", "M": "m1"}) == usage


def test_names_labels_and_retain_none_compactions_map_both_ways() -> None:
    info = from_pi_entry(_entry("session_info", "i", None, name="work"), "I", {})
    assert info["title"] == "work" and "name" not in info
    assert to_pi_entry(info, {"I": "i"})["name"] == "work"
    compaction = _entry("compaction", "c", None, summary="s", firstKeptEntryId="c", tokensBefore=3)
    stored = from_pi_entry(compaction, "C", {})
    assert stored["firstKeptEntryId"] is None  # tether's "keep nothing"
    assert to_pi_entry(stored, {"C": "c"})["firstKeptEntryId"] == "c"
    cleared = from_pi_entry(_entry("label", "l", None, targetId="x"), "L", {"x": "X"})
    assert (cleared["targetId"], cleared["label"]) == ("X", None)


def test_get_tree_nodes_carry_labels_and_roots() -> None:
    entries: list[dict[str, Any]] = [
        {
            "type": "message",
            "id": "A",
            "parentId": None,
            "timestamp": 1,
            "message": {"role": "user", "content": "a", "timestamp": 1},
        },
        {
            "type": "message",
            "id": "B",
            "parentId": "A",
            "timestamp": 2,
            "message": {"role": "user", "content": "b", "timestamp": 2},
        },
        {"type": "label", "id": "L", "parentId": "B", "timestamp": 3, "targetId": "A", "label": "start"},
        {
            "type": "message",
            "id": "C",
            "parentId": "A",
            "timestamp": 4,
            "message": {"role": "user", "content": "c", "timestamp": 4},
        },
    ]
    (root,) = pi_tree(entries)
    assert (root["entry"]["id"], root["label"], root["labelTimestamp"]) == ("A", "start", iso_timestamp(3))
    assert [child["entry"]["id"] for child in root["children"]] == ["B", "C"]


def test_a_v1_file_is_migrated_as_pi_migrates_it(tmp_path: Path) -> None:
    """v1: no ids (a linear chain), a compaction by index, ``hookMessage`` for custom messages."""
    path = _write(
        tmp_path / "v1.jsonl",
        [
            {"type": "session", "id": "old", "timestamp": "2024-01-01T00:00:00.000Z", "cwd": "/p"},
            {
                "type": "message",
                "timestamp": "2024-01-01T00:00:01.000Z",
                "message": {"role": "user", "content": "one", "timestamp": 1},
            },
            {
                "type": "message",
                "timestamp": "2024-01-01T00:00:02.000Z",
                "message": {
                    "role": "hookMessage",
                    "customType": "h",
                    "content": "x",
                    "display": True,
                    "timestamp": 2,
                },
            },
            {
                "type": "message",
                "timestamp": "2024-01-01T00:00:03.000Z",
                "message": {"role": "user", "content": "two", "timestamp": 3},
            },
            {
                "type": "compaction",
                "timestamp": "2024-01-01T00:00:04.000Z",
                "summary": "s",
                "firstKeptEntryIndex": 3,
                "tokensBefore": 9,
            },
        ],
    )
    header, entries = read_pi_session(path)
    assert header["version"] == 3
    assert [e["parentId"] for e in entries] == [None, *(e["id"] for e in entries[:-1])]
    assert entries[1]["message"]["role"] == "custom"
    assert entries[3]["firstKeptEntryId"] == entries[2]["id"]  # index 3 counts the header


def test_import_then_export_keeps_pi_ids_and_the_leaf(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        [
            HEADER,
            _entry("message", "a1", None, message={"role": "user", "content": "hi", "timestamp": 1}),
            _entry(
                "message",
                "s1",
                "a1",
                message={"role": "system", "content": "", "sections": {"p": "x"}, "timestamp": 2},
            ),
            _entry("custom_message", "c1", "s1", customType="ext", content="note", display=False),
            _entry("context_edit", "e1", "c1", targetId="a1", replacement=None),
            "garbage",  # type: ignore[list-item]  # a damaged line: skipped, as pi skips it
        ],
    )
    path.write_text(path.read_text().replace('"garbage"', "{not json"))
    with SessionManager.at(tmp_path / "db") as sessions:
        record = import_pi_session(sessions, path)
        session = sessions.open(record.id, readonly=True)
        # pi's system message is kept aside; the context edit leaves the user message out
        assert [m["role"] for m in session.messages] == ["custom"]
        session.close()
        out = export_pi_session(sessions, record.id, tmp_path / "out.jsonl")
    original = [json.loads(line) for line in path.read_text().splitlines()[1:-1]]
    exported = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    assert exported == original


def test_a_second_session_header_is_a_bad_entry_not_stored(tmp_path: Path) -> None:
    """A session header mid-file (two files joined) was stored as an entry of type ``session``
    and the pi export wrote it back mid-file. It is skipped and reported as other bad entries
    are (the entry after it hangs under the one before), or raises without ``problems``."""
    path = _write(
        tmp_path / "joined.jsonl",
        [
            HEADER,
            _entry("message", "a1", None, message={"role": "user", "content": "hi", "timestamp": 1}),
            {**HEADER, "id": "second"},
            _entry("message", "b1", "a1", message={"role": "user", "content": "again", "timestamp": 2}),
        ],
    )
    with pytest.raises(ImportFormatError, match=r"joined.jsonl:3: a second session header"):
        read_pi_session(path)
    problems: list[str] = []
    with SessionManager.at(tmp_path / "db") as sessions:
        record = import_pi_session(sessions, path, problems)
        assert problems == ["joined.jsonl:3: skipped: a second session header, not an entry"]
        out = export_pi_session(sessions, record.id, tmp_path / "out.jsonl")
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e["type"] for e in exported] == ["session", "message", "message"]
    assert [e.get("parentId") for e in exported[1:]] == [None, "a1"]


def test_a_file_that_is_not_a_pi_session_is_one_clear_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.jsonl", [{"type": "message", "id": "a"}])
    with pytest.raises(ImportFormatError, match=r"x.jsonl: not a pi session file"):
        read_pi_session(path)
    bad = _write(
        tmp_path / "y.jsonl",
        [HEADER, _entry("message", "a", None, message={"role": "user", "content": 5, "timestamp": 1})],
    )
    with pytest.raises(ImportFormatError, match=r"y.jsonl:2: message.content: expected a string or an array"):
        read_pi_session(bad)


def _exporter(sessions: SessionManager, session_id: str, kind: str) -> Callable[[Path], Path]:
    """The export of ``kind`` (``pi``, ``tether`` or ``html``) of the session, to a path."""

    def export(out: Path) -> Path:
        if kind == "pi":
            return export_pi_session(sessions, session_id, out)
        if kind == "html":
            with sessions.open(session_id, readonly=True) as session:
                return write_html(out, session)
        return sessions.export(session_id, out)

    return export


@pytest.mark.parametrize("kind", ["pi", "tether", "html"])
def test_an_export_through_a_link_writes_the_file_it_points_to(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As ``cp``, ``>`` and pi do: the export replaced the link with a file of its own, and the
    file the user meant kept its old content. The file written is the one the open reached (in
    place: its mode and inode kept), not the link's target looked up again: a link swapped
    after the open does not send the session elsewhere. A link to nothing is refused, as ``cp``
    refuses it, and nothing is made at its target."""
    path = _write(
        tmp_path / "s.jsonl",
        [HEADER, _entry("message", "a1", None, message={"role": "user", "content": "hi", "timestamp": 1})],
    )
    meant, other = tmp_path / "meant.jsonl", tmp_path / "other.jsonl"
    for file in (meant, other):
        file.write_text("old")
        file.chmod(0o644)
    before = meant.stat().st_ino
    link = tmp_path / "link.jsonl"
    link.symlink_to(meant)
    real_open = os.open

    def open_then_swap(name: str | os.PathLike[str], *args: Any, **kwargs: Any) -> int:
        fd = real_open(name, *args, **kwargs)
        if name == link:  # the kernel judged the open: the link now points elsewhere
            link.unlink()
            link.symlink_to(other)
        return fd

    with SessionManager.at(tmp_path / "db") as sessions:
        session_id = import_pi_session(sessions, path).id
        export = _exporter(sessions, session_id, kind)

        with monkeypatch.context() as patched:
            patched.setattr(os, "open", open_then_swap)
            assert export(link) == link
        assert "hi" in meant.read_text() and not meant.read_text().startswith("old")
        assert (meant.stat().st_ino, meant.stat().st_mode & 0o777) == (before, 0o644)
        assert other.read_text() == "old" and link.is_symlink()
        dangling = tmp_path / "dangling.jsonl"
        dangling.symlink_to(tmp_path / "gone" / "x.jsonl")
        with pytest.raises(
            OSError,
            match=rf"^cannot write {dangling}: it links to {tmp_path}/gone/x.jsonl, which does not exist; "
            "not written through$",
        ):
            export(dangling)
        assert not (tmp_path / "gone").exists() and dangling.is_symlink()


@pytest.mark.parametrize("kind", ["pi", "tether", "html"])
def test_an_export_never_writes_through_a_planted_link_and_names_its_path(tmp_path: Path, kind: str) -> None:
    """Exports went through ``OUT.tmp`` opened by name: a link planted there sent the session
    into the file it pointed to, and a missing folder was reported as ``…/x.jsonl.tmp`` (the
    HTML page, ``--export`` and ``export_html``, did so until session 27). A pipe or device there,
    or a link to one (``/dev/stdout``), was renamed over: as root, ``--export s.jsonl /dev/null``
    replaced ``/dev/null`` with the page."""
    path = _write(
        tmp_path / "s.jsonl",
        [HEADER, _entry("message", "a1", None, message={"role": "user", "content": "hi", "timestamp": 1})],
    )
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    with SessionManager.at(tmp_path / "db") as sessions:
        session_id = import_pi_session(sessions, path).id
        export = _exporter(sessions, session_id, kind)

        planted = tmp_path / "planted.jsonl"
        (tmp_path / "planted.jsonl.tmp").symlink_to(victim)
        export(planted)
        assert victim.read_text() == "keep me"
        assert planted.stat().st_mode & 0o777 == 0o600 and "hi" in planted.read_text()
        (tmp_path / "folder").mkdir()
        for out, why in [
            (tmp_path / "folder", "Is a directory"),
            (tmp_path / "no" / "x.jsonl", "No such file"),
        ]:
            with pytest.raises(OSError, match=rf"^cannot write {out}: {why}"):
                export(out)
        os.mkfifo(tmp_path / "fifo")
        (tmp_path / "stdout").symlink_to(tmp_path / "fifo")  # as /dev/stdout links to a pipe
        for out in (tmp_path / "fifo", tmp_path / "stdout"):  # renamed over, a device was gone
            with pytest.raises(OSError, match=rf"^cannot write {out}: not a regular file \(a pipe"):
                export(out)
        assert stat.S_ISFIFO((tmp_path / "fifo").lstat().st_mode) and (tmp_path / "stdout").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == ["planted.jsonl.tmp"]
