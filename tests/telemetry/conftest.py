"""Fixtures of the telemetry tests: an in-memory SDK per test, and no global instrumentation left over."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from telemetry_support import Otel

from tether import telemetry


@pytest.fixture
def otel() -> Otel:
    return Otel()


@pytest.fixture(autouse=True)
def _no_global_instrumentation() -> Iterator[None]:
    yield
    telemetry.uninstrument()
