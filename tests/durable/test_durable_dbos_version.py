"""A DBOS past the pinned versions is refused at a worker's launch, in one line naming the versions
tether.durable needs. ``executing`` reads two private members of DBOS (``_get_dbos_instance``,
``_active_workflows_set.activeList()``); without the check an upgrade that dropped them launched
a worker that failed on each heartbeat, or at import with "install the durable extra"."""

from __future__ import annotations

import tomllib
from pathlib import Path

import dbos._dbos
import pytest
from dbos._core import ActiveWorkflowById  # pyright: ignore[reportPrivateUsage]

from tether.durable.config import DurableConfig
from tether.durable.worker import launch, shutdown
from tether.durable.workflow import DBOS_REQUIREMENT, DbosVersionError, Runtime

ROOT = Path(__file__).resolve().parents[2]


def runtime(tmp_path: Path) -> Runtime:
    config = DurableConfig(
        system_database=f"sqlite:///{tmp_path / 'durable.sqlite'}", sessions=str(tmp_path / "sessions.db")
    )
    return Runtime(config, tmp_path / "home" / "config")


@pytest.mark.parametrize(
    ("owner", "member", "named"),
    [
        (dbos._dbos, "_get_dbos_instance", "dbos._dbos._get_dbos_instance"),
        (ActiveWorkflowById, "activeList", "DBOS._active_workflows_set.activeList()"),
    ],
    ids=["no-get-dbos-instance", "no-active-list"],
)
def test_launch_refuses_a_dbos_without_the_members_tether_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, owner: object, member: str, named: str
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    with monkeypatch.context() as patched:
        patched.delattr(owner, member)
        with pytest.raises(DbosVersionError) as refused:
            launch(runtime(tmp_path))
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"tether.durable needs {DBOS_REQUIREMENT}, not dbos ")
    assert f"which lacks {named}" in message
    shutdown(launch(runtime(tmp_path)))  # the refused launch left nothing behind


def test_the_required_dbos_is_the_one_pyproject_pins() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert DBOS_REQUIREMENT in project["optional-dependencies"]["durable"]
