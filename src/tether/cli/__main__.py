"""``python -m tether.cli``: the same as the ``tether`` command."""

from tether.cli.main import command

command()
