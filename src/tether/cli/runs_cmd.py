"""``tether runs list|show|cancel|resume|retry|prune``: the operator's side of durable runs.

Thin: the work is ``tether.durable.runs``; this prints its answers, as text for people or, with
``--json``, as one JSON document on stdout (nothing else goes there).
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from tether.cli.durable_cmd import DurableCommandError, durable_config
from tether.wire.escapes import visible

if TYPE_CHECKING:
    from tether.durable.client import DurableClient

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


_MAX_AGE = 10_000 * 365.25 * 86400
EFFECTS = {"cancel": "the cancel", "resume": "the resume", "retry": "the retry", "prune": "the prune"}
"""What each changing action does, said to maybe still take effect when the database is silent."""


def parse_age(text: str, flag: str) -> float:
    """``90s``, ``15m``, ``2h``, ``7d`` (a bare number: seconds) → seconds."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if found is None:
        raise DurableCommandError(f"{flag} {text!r}: expected a number with s, m, h or d (like 2h or 7d)")
    seconds = float(found.group(1)) * _UNITS[found.group(2) or "s"]
    if seconds > _MAX_AGE:  # a date before year 1 (or not a number at all): no query can use it
        raise DurableCommandError(f"{flag} {text!r}: more than 10000 years")
    return seconds


def run_command(
    action: str,
    *,
    durable_database: str | None,
    as_json: bool,
    out: TextIO = sys.stdout,
    **args: Any,
) -> int:
    """Do ``action`` with ``args`` on the configured system database and print the answer."""
    import logging

    from tether.durable import runs
    from tether.durable.client import SubmitError, answer

    config = durable_config(durable_database)
    logging.getLogger("dbos").setLevel(logging.CRITICAL)  # its errors reach the user as one line
    days = args.get("older_than_days")
    days = config.keep_runs_days if days is None else days
    if action == "prune" and not days and args.get("older_than_days") is None:
        raise DurableCommandError("prune: durable.keepRunsDays is 0 (keep for good): give --older-than")
    actions: dict[str, Callable[[DurableClient], Any]] = {
        "list": lambda c: runs.list_runs(c, **args),
        "show": lambda c: runs.show(c, args["run_id"]),
        "cancel": lambda c: runs.cancel(c, args["run_id"]),
        "resume": lambda c: runs.resume(c, args["run_id"]),
        "retry": lambda c: runs.retry(c, args["run_id"]),
        "prune": lambda c: runs.prune(c, days),
    }
    try:
        # a database that stops answering is waited for config.answer_wait_seconds, not for ever
        result = answer(config, actions[action], effect=EFFECTS.get(action, ""))
    except (SubmitError, runs.RunNotFoundError, ValueError) as exc:
        raise DurableCommandError(str(exc)) from None
    except Exception as exc:
        from tether.durable.client import shown
        from tether.durable.config import first_line

        raise DurableCommandError(
            f"durable database {shown(config.system_database)}: {first_line(exc)}"
        ) from None
    if as_json:
        out.write(json.dumps(_plain(result), ensure_ascii=False) + "\n")
    else:
        _print(action, result, out)
    return 0


def _plain(answer: Any) -> Any:
    if isinstance(answer, list):
        return [_plain(item) for item in answer]  # pyright: ignore[reportUnknownVariableType]
    as_dict = getattr(answer, "as_dict", None)
    if callable(as_dict):
        return as_dict()
    return {"id": answer} if isinstance(answer, str) else answer


def _print(action: str, answer: Any, out: TextIO) -> None:
    from tether.durable.runs import RunDetail, RunInfo

    if action == "list":
        if not answer:
            out.write("no runs\n")
        for run in answer:
            out.write(_line(run) + "\n")
    elif action == "show" and isinstance(answer, RunDetail):
        out.write(_line(answer.run) + "\n")
        if answer.run.error:
            out.write(f"  error: {_shown(answer.run.error)}\n")
        for step in answer.steps:
            took = f"{step.ended - step.started:.2f}s" if step.started and step.ended else "-"
            usage = (
                f"  {step.input_tokens}→{step.output_tokens} tokens ${step.cost:.4f}"
                if step.name == "model"
                else ""
            )
            error = f"  error: {_shown(step.error)}" if step.error else ""
            out.write(f"  #{step.number:<3} {_shown(step.name):<24} {took:>8}{usage}{error}\n")
        out.write(f"  total: {answer.input_tokens}→{answer.output_tokens} tokens ${answer.cost:.4f}\n")
    elif action == "prune":
        out.write(f"pruned {len(answer)} finished runs\n")
    elif action == "retry":
        out.write(f"{_shown(answer)}\n")
    elif isinstance(answer, RunInfo):
        out.write(_line(answer) + "\n")


def _line(run: Any) -> str:
    """One run on one line, what programs wrote in it (its id, session, worker and prompt are
    the submitter's choice) escaped: a newline forged a line of the listing, an escape sequence
    drove the terminal."""
    age = _age(time.time() - run.created) if run.created else "-"
    prompt = " ".join((run.prompt or "").split())
    prompt = _shown(prompt if len(prompt) <= 40 else prompt[:39] + "…")
    return (
        f"{_shown(run.id)}  {run.status:<9} {_shown(run.session or '-')}  {_shown(run.worker or '-')}"
        f"  {age:>5} ago  {prompt}"
    )


def _shown(text: str) -> str:
    return visible(text, one_line=True)


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"
