"""The `bench` command (harness/cli/app.py: the group and what commands share; measuring, reading,
publishing, database: the commands)."""

from harness.cli import database, measuring, publishing, reading  # noqa: F401  each registers its commands
from harness.cli.app import cli


def main():
    cli()
