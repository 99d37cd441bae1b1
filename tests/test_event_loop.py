"""``tether._event_loop``: uvloop when it is importable and not turned off, asyncio's loop otherwise."""

from __future__ import annotations

import asyncio
import sys
import types

import pytest

import tether._event_loop as _event_loop


def _fake_uvloop(monkeypatch: pytest.MonkeyPatch) -> list[asyncio.AbstractEventLoop]:
    """A module named ``uvloop`` whose factory makes asyncio's loop and remembers it."""
    made: list[asyncio.AbstractEventLoop] = []

    def new_event_loop() -> asyncio.AbstractEventLoop:
        loop = asyncio.new_event_loop()
        made.append(loop)
        return loop

    module = types.ModuleType("uvloop")
    module.new_event_loop = new_event_loop  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "uvloop", module)
    return made


async def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def test_run_uses_uvloop_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TETHER_UVLOOP", raising=False)
    made = _fake_uvloop(monkeypatch)
    loop = _event_loop.run(_running_loop())
    assert made == [loop]


def test_tether_uvloop_0_keeps_asyncio_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_UVLOOP", "0")
    made = _fake_uvloop(monkeypatch)
    assert _event_loop.loop_factory() is None
    _event_loop.run(_running_loop())
    assert made == []


def test_without_uvloop_asyncio_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TETHER_UVLOOP", raising=False)
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop raises ImportError
    assert _event_loop.loop_factory() is None
    assert _event_loop.run(asyncio.sleep(0, "done")) == "done"
