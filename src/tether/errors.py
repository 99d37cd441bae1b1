"""The error family: every exception tether raises on purpose descends from ``TetherError``.

A program that builds on tether catches one class to tell tether's failures from its own bugs,
and a front end catches it to print one line instead of a traceback (``tether: <message>``):
each message already says what went wrong and where. Under the root:

- ``UserError``: something the user can fix (a flag, a setting, a file they wrote, a model name);
- ``ModelError``: the model asked for cannot be used (unknown model or provider, a bad
  ``models.json``); a user error;
- ``TransportError``: another process failed us (an RPC server gone, a durable run not
  submitted);
- ``ToolError``: a tool call that cannot be carried out; the loop hands its message to the model.

The session store's ``SessionError`` (``tether.store.errors``) is a family of its own under the
root. Classes that were ``ValueError``, ``LookupError`` or ``RuntimeError`` before the family
existed keep that base too, so ``except ValueError`` around them still works.

A leaf module, under every layer: it imports nothing, so any layer may raise these.
Provider failures are not raised at all: they end the stream with ``stopReason: "error"``.
"""


class TetherError(Exception):
    """The root of every exception tether raises on purpose; the message says what and where."""

    def __reduce__(self) -> tuple[object, ...]:
        """Unpickled as it was, its message and fields, without calling ``__init__`` again. A
        durable run's error is pickled into the run's record (DBOS) and read back by whoever
        lists the run: ``Exception``'s own way calls ``__init__`` with the *message*, which made
        ``no session "no session 'ID'"`` of a ``SessionNotFoundError``, and failed outright for
        classes taking two arguments (``WireError``: the run's error read as the pickle's
        base64)."""
        return (_unpickled, (type(self), self.args, self.__dict__))


def _unpickled(cls: type[TetherError], args: tuple[object, ...], fields: dict[str, object]) -> TetherError:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(fields)
    return error


class UserError(TetherError):
    """A mistake the user can fix (input, flag, setting, file); shown as one line, no traceback."""


class ModelError(UserError, ValueError):
    """The requested model cannot be used; the message says why and what to do."""


class TransportError(TetherError):
    """Another process we talk to failed, went away or refused (an RPC server, a run's database)."""


class ToolError(TetherError):
    """A tool call that cannot be carried out; the message tells the model why.

    The agent loop turns any exception from a tool's ``execute`` into an error tool result whose
    text is the exception's message, so a ``ToolError`` message is written for the model: what
    went wrong, where, and what to do instead."""
