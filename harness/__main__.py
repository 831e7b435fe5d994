"""Allow `python -m harness ...` as a synonym of the `bench` console script."""

from harness.cli import main

main()
