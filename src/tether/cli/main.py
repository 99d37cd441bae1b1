"""The ``tether`` command. Heavy modules are imported inside commands so start-up stays fast."""

from __future__ import annotations

import sys

import click

from tether import __version__


@click.group(invoke_without_command=True)
@click.version_option(__version__, prog_name="tether")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """tether: a coding agent and Python agent runtime."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


@cli.command()
def schema() -> None:
    """Print the JSON Schema bundle of the wire types."""
    from tether.wire.schema import bundle_json

    sys.stdout.write(bundle_json())


@cli.command()
def demo() -> None:
    """Run the main job (for now: a summary of the wire schema)."""
    from tether.wire.schema import summary

    click.echo(summary())


def main() -> None:
    cli()
