"""EntryTree.path and newest_id on hand-built trees, including the broken ones."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

from tether.store import tree as tree_module
from tether.store.jsonl import sound_entries
from tether.store.store import SessionRecord, StoredEntry
from tether.store.tree import CorruptSessionError, EntryTree, Node, paused_gc


def tree(links: dict[str, str | None]) -> EntryTree:
    return EntryTree(Node(i, p, "label", 0, payload=b"{}") for i, p in links.items())


def test_path_runs_root_to_leaf() -> None:
    t = tree({"a": None, "b": "a", "c": "b", "x": "a"})
    assert [n.id for n in t.path("c")] == ["a", "b", "c"]
    assert [n.id for n in t.path("x")] == ["a", "x"]
    assert t.path(None) == []


def test_path_through_every_entry_is_not_a_cycle() -> None:
    ids = [f"e{i:03d}" for i in range(50)]
    t = tree({i: (ids[k - 1] if k else None) for k, i in enumerate(ids)})
    assert [n.id for n in t.path(ids[-1])] == ids


@pytest.mark.parametrize(
    "links", [{"a": "a"}, {"a": "b", "b": "a"}, {"r": None, "a": "c", "b": "a", "c": "b"}]
)
def test_parent_cycle_is_reported(links: dict[str, str | None]) -> None:
    with pytest.raises(CorruptSessionError, match="form a cycle"):
        tree(links).path("a")


def test_missing_parent_is_reported() -> None:
    with pytest.raises(CorruptSessionError, match="'gone' is referenced as a parent but missing"):
        tree({"a": "gone"}).path("a")


def test_newest_id_is_the_greatest_id() -> None:
    assert tree({}).newest_id() is None
    assert tree({"01B": None, "01C": "01B", "01A": "01B"}).newest_id() == "01C"


class Cell:
    def __init__(self) -> None:
        self.other: object = None


def test_paused_gc_leaves_no_young_collection_pending_and_still_collects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        tree_module, "_host_froze", False, raising=False
    )  # whatever ran before in this process
    with paused_gc():
        loaded = [{"n": [i]} for i in range(5_000)]  # well above the young threshold
        a, b = Cell(), Cell()
        a.other, b.other = b, a  # a cycle made while paused must still be reclaimed
        probe = weakref.ref(a)
        collections: list[int] = []
        gc.callbacks.append(lambda phase, info: collections.append(info["generation"]))
    try:
        _ = [[i] for i in range(10)]  # with a young collection pending, this would run it
    finally:
        gc.callbacks.pop()
    assert collections == []
    assert gc.get_freeze_count() == 0
    del a, b
    gc.collect()
    assert probe() is None
    assert len(loaded) == 5_000


def test_paused_gc_keeps_objects_the_host_froze(monkeypatch: pytest.MonkeyPatch) -> None:
    # Checked by identity, not by gc.get_freeze_count(): in a long test process other threads
    # may free a few frozen objects meanwhile. A frozen object is in no generation.
    monkeypatch.setattr(tree_module, "_host_froze", False, raising=False)
    host_object: list[object] = []
    gc.freeze()
    try:
        for _ in range(2):  # the second time knowing it, without asking
            with paused_gc():
                _ = [[i] for i in range(1_000)]
            assert not any(o is host_object for o in gc.get_objects())
            assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert any(o is host_object for o in gc.get_objects())


def test_paused_gc_counts_the_frozen_objects_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``gc.get_freeze_count`` walks every frozen object (a service's start-up: ~1 ms): asked at
    every open, it cost more than opening a short session."""
    monkeypatch.setattr(tree_module, "_host_froze", False, raising=False)
    asked: list[int] = []
    count = gc.get_freeze_count

    def counted() -> int:
        asked.append(count())
        return asked[-1]

    monkeypatch.setattr(gc, "get_freeze_count", counted)
    gc.freeze()
    try:
        for _ in range(3):
            with paused_gc():
                pass
    finally:
        gc.unfreeze()
    assert len(asked) == 1 and asked[0] > 0


def test_paused_gc_takes_no_other_opens_frozen_objects_for_the_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two threads opening sessions at once: the second one's end, between the first one's
    freeze and unfreeze, counted those objects as the host's and stopped the move for good."""
    monkeypatch.setattr(tree_module, "_host_froze", False, raising=False)
    freeze = gc.freeze
    threads: list[threading.Thread] = []

    def freeze_then_let_another_open_end() -> None:
        freeze()
        if not threads:  # the first freeze only: the other thread's own freeze goes on
            threads.append(threading.Thread(target=_open_and_close))
            threads[0].start()
            threads[0].join(0.5)  # on main it ends here, seeing this thread's frozen objects

    monkeypatch.setattr(gc, "freeze", freeze_then_let_another_open_end)
    with paused_gc():
        pass
    threads[0].join()
    assert tree_module._host_froze is False  # pyright: ignore[reportPrivateUsage]
    assert gc.get_freeze_count() == 0


def _open_and_close() -> None:
    with paused_gc():
        pass


def test_an_export_hangs_the_children_of_a_damaged_row_from_its_parent() -> None:
    """Two damaged rows in a line (b, c) and a damaged leaf (e): d hangs from a, its nearest sound
    ancestor, and the leaf moves up to d, so the file imports whole; each skip is told once."""
    rows = [
        ("a", None, b"{}"),
        ("b", "a", b"{ba"),
        ("c", "b", b"[1]"),
        ("d", "c", b'{"x":1}'),
        ("e", "d", b""),
    ]
    entries = [StoredEntry(i, p, "message", 1, payload) for i, p, payload in rows]
    record = SessionRecord("S", "/", None, 1, 1, "e", 1, None, None, None, 0, 0, 0.0, 0, 0, 0, 0)
    told: list[str] = []
    header, kept = sound_entries(record, entries, told.append)
    assert header.leaf_id == "d" and [payload for _, payload in kept] == [b"{}", b'{"x":1,"parentId":"a"}']
    assert [entry for entry, _ in kept] == [{}, {"x": 1, "parentId": "a"}]
    assert [why.split(":")[0] for why in told] == ["entry 'b'", "entry 'c'", "entry 'e'"]


def test_entries_appended_unbuilt_are_read_as_added_ones_in_append_order() -> None:
    """``append`` makes an entry's node when the tree is next read: every reader sees it, in
    append order with the entries ``add`` and ``add_stored`` took before and after it."""
    t = EntryTree()
    t.add({"id": "a", "parentId": None, "type": "message", "timestamp": 1})
    t.append({"id": "b", "parentId": "a", "type": "message", "timestamp": 2, "message": {"role": "user"}})
    t.append({"id": "c", "parentId": "b", "type": "label", "timestamp": 3})
    assert "c" in t and len(t) == 3 and t.last_id() == "c" and t.newest_id() == "c"
    t.append({"id": "d", "parentId": "b", "type": "label", "timestamp": 4})
    t.add_stored(StoredEntry("e", "d", "label", 5, b"{}"))
    assert [n.id for n in t] == ["a", "b", "c", "d", "e"]
    assert [n.id for n in t.path("e")] == ["a", "b", "d", "e"]
    node = t.get("b")
    assert node is not None and node.message == {"role": "user"} and node.created == 2
    assert [n.id for n in t.children("b")] == ["c", "d"]
