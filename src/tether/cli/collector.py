"""The end of a front end's start-up, for Python's cyclic collector (``cli/main.py`` ``command``
pauses it while a run, ``serve`` or ``worker`` starts)."""

from __future__ import annotations

import gc

from tether.gc_tuning import tune_gc


def start_up_done(*, many_sessions: bool = False) -> None:
    """The modules are loaded and the core (or server, or worker) is built: if ``command``
    paused the cyclic collector for the start-up, freeze what the start-up made, so that later
    collections need not examine it again, and let the collector run.

    ``many_sessions`` (``serve``, ``worker``): ``tune_gc`` instead, which also raises the young
    threshold, so that the short-lived objects of many requests in flight are freed by
    reference counting before a collection walks them. A run of one session (print, JSON, RPC,
    ACP, interactive) gains little from it (a few percent of a run's work) and would keep its
    cyclic garbage longer.

    A cycle among the frozen objects that dies later stays in memory (the first core's, say,
    after ``/new`` in the interactive mode): one start-up's worth at most. Under ``main`` alone
    (a test, a program of its own) the collector is on and this does nothing.
    """
    if not gc.isenabled():
        if many_sessions:
            tune_gc()
        else:
            gc.freeze()
        gc.enable()
