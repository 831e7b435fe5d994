"""The `bench` command (harness/cli/app.py: the group and what commands share; measuring, measurers,
reading, comparing, modelling, publishing, database: the commands). `cli` (the group with every command)
is loaded when first asked for, so that main() can turn a Ctrl-C while the modules load into the same
one line as any other."""


def _group():
    # each registers its commands
    from harness.cli import comparing, database, fleet, measuring, modelling, publishing, reading  # noqa: F401
    from harness.cli.app import cli

    return cli


def __getattr__(name):
    if name == "cli":
        return _group()
    raise AttributeError(f"module 'harness.cli' has no attribute {name!r}")


def main():
    try:
        group = _group()
    except KeyboardInterrupt:  # Ctrl-C while the modules load: no traceback either
        import sys

        sys.stderr.write("error: interrupted\n")
        sys.exit(130)
    group()
