"""tether.durable: agent runs that survive a crash and spread over worker processes (DBOS).

Needs the ``durable`` extra (``pip install '<checkout or wheel>[durable]'``). See ``docs/durable.md``.
Nothing on the CLI's default path imports this package: DBOS loads only in ``tether worker``,
``tether submit`` and programs that use it.
"""

# Names load on first use (module __getattr__). Each `A as A` import names one export (tether/_lazy.py).
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports

if TYPE_CHECKING:
    from tether.durable.client import DurableClient as DurableClient, SubmitError as SubmitError
    from tether.durable.config import (
        DurableConfig as DurableConfig,
        config_from_settings as config_from_settings,
    )
    from tether.durable.steps import (
        RERUN_KEY as RERUN_KEY,
        RERUNNABLE as RERUNNABLE,
        ToolInterruptedError as ToolInterruptedError,
        may_rerun as may_rerun,
    )
    from tether.durable.worker import launch as launch, serve as serve
    from tether.durable.workflow import (
        RunOutcome as RunOutcome,
        RunRequest as RunRequest,
        Runtime as Runtime,
        durable_run as durable_run,
    )


__getattr__, __dir__ = lazy_exports(__name__, __file__, globals())
