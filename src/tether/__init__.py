"""tether: a Python agent runtime.

Subpackages, lowest first: ``wire`` (transcript types), ``ai`` (streaming LLM API),
``telemetry`` (OpenTelemetry spans and metrics of runs), ``agent`` (the agent loop), ``session``
(durable sessions), ``tools`` (coding tools), ``cli``, ``rpc`` and ``testing``. Dependencies
point downward only.
"""

__version__ = "0.1.0"
