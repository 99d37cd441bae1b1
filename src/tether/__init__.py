"""tether: a Python agent runtime.

Subpackages, lowest first: ``wire`` (transcript types), ``ai`` (streaming LLM API), ``agent``
(the agent loop), ``session`` (durable sessions), ``tools`` (coding tools), ``cli``, ``rpc``
and ``testing``. Dependencies point downward only.
"""

# The one place the version is written: pyproject.toml reads it from here (hatch's dynamic version).
__version__ = "0.1.0"
