"""`bench compare`: a run against the paper, the model or another run (`bench fleet`, the GPUs of the database
against their siblings, is harness/cli/fleet.py)."""

from __future__ import annotations

import sys

import click

from harness import output
from harness.paper import DEFAULT_TOLERANCE, PAPER_GPU
from harness.cli.app import (
    Finite, RUN_ID, DB_HELP, EXIT_DIFFERENCES, COMPARE_COLUMNS, table_options, print_frame, say, cli, open_store,
)


@cli.command()
@click.option("--run", "run_id", default=None, type=RUN_ID, help="run to compare (default: the newest complete run)")
@click.option("--against", default="paper", show_default=True, metavar="paper|model|RUN_ID",
              help="the paper's H800 figures, the model's predictions, or another run")
@click.option("--metric", default=None, help="only this metric (e.g. issue_interval_cycles)")
@click.option("--disagreements", is_flag=True, help="only the rows that disagree (or differ from the other run)")
@click.option("--all", "every_row", is_flag=True,
              help="every row (default: the summary and the rows that differ, at most a screen of them)")
@click.option("--gate-energy", is_flag=True,
              help="a power or energy difference from the other run fails too (default: reported, exit 0)")
@click.option("--include-flagged", is_flag=True, help="keep measurements taken while throttled or shared")
@click.option("--exit-zero", is_flag=True, help="exit 0 even where rows differ (default: exit 3, for CI)")
@click.option("--gate-models", is_flag=True,
              help="against a run of another GPU model, a slower row fails too (default: reported, exit 0)")
@click.option("--tolerance", default=DEFAULT_TOLERANCE, show_default=True, type=Finite(0, 10),
              help="relative difference allowed on top of the measurement's spread")
@click.option("--sort", type=click.Choice(("case", "change")), default="case", show_default=True,
              help="case: by case and metric; change: the largest relative change first (the ratio's distance from 1)")
@click.option("--db", default=None, help=DB_HELP)
@table_options
def compare(run_id, against, metric, disagreements, every_row, gate_energy, include_flagged, exit_zero, gate_models,
            tolerance, sort, db, fmt, wide):
    """Compare a run with the paper, the model, or another run: one row per case and metric.

    Cycle metrics compare directly; TFLOPS compare per cycle per SM (ours by the SM clock measured in
    the kernel, the paper's by the clock it printed, else the clock its figure implies), and the
    note names the reason of every verdict but "agrees". Run against run says "same" when the
    difference is within the noise of either; power and energy say "more energy" or "less energy"
    (power is not speed), with change_pct, the change in percent, beside the ratio. --disagreements keeps the
    rows that differ beyond the noise and have no reason given (DISAGREES, slower, faster, more or less energy);
    --sort change puts the largest change first.

    \b
    A table leads with the summary (both sides, the count of each verdict), then the rows that
    differ, at most a screen of them; --all prints every row. Other formats give every row (the
    summary on stderr). Exit status: 0 when no row is DISAGREES (against the paper or the model) or
    slower (against a run of the same GPU model; more energy too with --gate-energy); 3 when one is, so a
    CI job can gate on it (--exit-zero: 0 regardless); 4 when two runs share no case and metric. Two
    runs of different GPU models differ because the boards do: the comparison says so first and
    exits 0 on slower rows unless --gate-models.

    \b
    Examples:
      bench compare
      bench compare --run 5 --against 4 --disagreements
      bench compare --against model --metric issue_interval_cycles --format markdown
    """
    from harness.analysis.compare import BadArgument, comparison, parse_against, run_label

    try:
        parse_against(against)  # before the database is opened
        store = open_store(db)
        result = comparison(store, run_id, against, metric, disagreements, include_flagged, tolerance, gate_energy,
                            sort)
    except BadArgument as exc:
        raise click.BadParameter(str(exc), param_hint=f"--{exc.parameter}") from None
    if result.no_model:
        click.echo("note: no model prediction for this run (its GPU has no row in gpu_specs.csv, or its "
                   "families have no model): the model columns are empty", err=True)
    other = f"run {result.against} ({output.visible(run_label(store, result.against))})" if isinstance(result.against, int) else \
        (_figures_of(result.frame, store.run_info(result.run_id).gpu_name) if against == "paper" else "the model")
    boards = _gpu_models(store, result.run_id, result.against) if isinstance(result.against, int) else None
    if boards:
        click.echo(f"note: run {result.run_id} is of an {output.visible(boards[0])} and run {result.against} of an "
                   f"{output.visible(boards[1])}: a "
                   "difference is the boards', not a regression" + ("" if gate_models else
                   "; slower rows are reported, not failed (--gate-models fails on them)"), err=True)
        per_second = int((result.frame.basis == "per second").sum()) if "basis" in result.frame else 0
        if per_second:  # a library call's rate: no clock of its own to compare it per cycle (run_verdicts.PER_SECOND)
            click.echo(f"note: {per_second} {'row compares' if per_second == 1 else 'rows compare'} per second, not "
                       f"per cycle: library calls (cuBLAS, cuBLASLt, "
                       "cuDNN) measure no clock of their own, so their difference includes the boards' clocks "
                       "(column basis)", err=True)
    side = f"run {result.run_id} ({output.visible(run_label(store, result.run_id))})"
    if fmt != "table":
        print_frame(result.frame, fmt, wide)
        counts = ", ".join(f"{n} {verdict}" for verdict, n in result.counts().items()) or "no rows"
        click.echo(f"{side} against {other}: {counts}", err=True)
    else:
        _compare_table(result, f"{side}\nagainst {other}", disagreements or every_row, wide, gate_energy,
                       gate_speed=gate_models or not boards)
    if against == "paper" and _nothing_published(result):
        say(_what_to_ask(store, result.run_id))
    if result.failed and not exit_zero and (gate_models or not boards or _fails_beyond_speed(result)):
        sys.exit(EXIT_DIFFERENCES)


def in_the_papers_unit(frame):
    """Rows whose paper figure is in another unit than ours (a latency we count in cycles, the paper in ns) show
    our value as compared, in the paper's unit, so that a row has one unit (issue 46, item 3); `--format csv` keeps
    both (`value`, `unit`; `comparable`, `paper_unit`)."""
    if not {"comparable", "paper_unit", "unit", "value"} <= set(frame.columns):
        return frame
    other = frame.paper_unit.notna() & (frame.paper_unit != "") & (frame.paper_unit != frame.unit) \
        & frame.comparable.notna()
    if not other.any():
        return frame
    frame = frame.copy()
    frame.loc[other, "value"] = frame.loc[other, "comparable"]
    frame.loc[other, "unit"] = frame.loc[other, "paper_unit"]
    return frame


def _nothing_published(result) -> bool:
    """Every row of a comparison with the paper is "no paper figure" (issue 46, item 2: a fresh clone's first
    answer was 363 of them, for the newest run, a GEMM run)."""
    from harness import verdicts

    counts = result.counts()
    return len(counts) > 0 and set(counts.index) == {verdicts.NO_PAPER_FIGURE}


def _what_to_ask(store, run_id: int) -> str:
    """What to compare instead: the newest other run with a published counterpart, the model, another run."""
    from harness.analysis.compare import newest_run_with_figures

    newest = newest_run_with_figures(store, run_id)
    where = f"the newest run with some is run {newest}: `bench compare --run {newest}`; " if newest else ""
    return (f"note: no case of run {run_id} has a published figure; {where}or ask run {run_id} against the model "
            f"(`bench compare --run {run_id} --against model`) or another run (`--against RUN`)")


def _gpu_models(store, run_id: int, other: int) -> tuple[str, str] | None:
    """The two runs' GPU models where they differ (None: the same model)."""
    first, second = store.run_info(run_id).gpu_name, store.run_info(other).gpu_name
    return (first, second) if first != second else None


def _fails_beyond_speed(result) -> bool:
    """A failing row that is not "slower" (more energy under --gate-energy): across GPU models it still fails."""
    from harness import verdicts

    return result.failing > int((result.frame[result.column] == verdicts.SLOWER).sum())


def _figures_of(frame, run_gpu: str | None = None) -> str:
    """Whose published figures a comparison holds: the papers' (H800 PCIe) and, for a run of another GPU model,
    the figures stated for that model (the seed documents' H100 SXM); of a GPU with the same SM on another board
    (figure_gpus.other_boards: an H200 run, the H100 SXM5's), those of the SM only."""
    from harness.analysis.figure_gpus import other_boards

    gpus = sorted(set(frame["paper_gpu"].dropna())) if "paper_gpu" in frame else []
    boards = other_boards(run_gpu)
    own = [g for g in gpus if g != PAPER_GPU and g not in boards]
    text = f"the paper ({PAPER_GPU})" + (f" and the figures stated for the {', '.join(own)}" if own else "")
    same = [g for g in gpus if g in boards]
    if same:
        text += (f" and the {', '.join(same)}'s figures of the SM, which this GPU shares (gpu_specs.csv sm_of; its "
                 "memory system's, L2 and HBM, are another board's and left out)")
    return text


def _compare_table(result, sides: str, every: bool, wide: bool, gate_energy: bool, gate_speed: bool = True) -> None:
    """`bench compare` on a terminal: the summary (both sides, one line per verdict, those that fail
    first), the rows that differ (performance, then power and energy) and, with `every`, the rest;
    without it, at most a screen (the terminal's height) in all."""
    import shutil

    from harness import verdicts

    frame, first, keep = _compare_columns(result)
    ranked = _ranked_verdicts(frame)
    summary = _summary_lines(sides, ranked, gate_energy, gate_speed)
    click.echo("\n".join(summary))

    performance = frame[frame.verdict.isin(verdicts.FAILING + (verdicts.FASTER,))]
    energy = frame[frame.verdict.isin((verdicts.MORE_ENERGY, verdicts.LESS_ENERGY))]
    rest = frame[~frame.index.isin(performance.index) & ~frame.index.isin(energy.index)]
    energy_heading = "power and energy (they follow the board, its power limit and its inputs): " + \
                     ("reported, gating only with --gate-energy" if not gate_energy else "gating (--gate-energy)")
    sections = [(performance, "rows that differ:"), (energy, energy_heading)]
    if every:
        sections.append((rest, "the other rows:"))
    # the screen less the summary, and three lines after the rows: "... more such rows", a blank and the count
    budget = max(shutil.get_terminal_size((80, 24)).lines, 24) - len(summary) - 3
    _print_sections(sections, budget, every, first, keep, wide)
    if performance.empty and energy.empty:
        click.echo("\nno row differs beyond the noise")
    left_out = 0 if every else len(rest)
    if left_out:
        kinds = ", ".join(f"{n} {v}" for v, n in ranked
                          if v not in verdicts.DIFFERING) or f"{left_out}"
        click.echo("")
        say(f"{left_out} rows that do not differ ({kinds}): --all shows them")


def _compare_columns(result):
    """The comparison's rows as a terminal shows them (against the paper, in the paper's unit), with short
    headers so that a narrow table keeps its columns; the columns shown first, and those never left out."""
    frame = result.frame
    kind = result.against if result.against in COMPARE_COLUMNS else "run"
    if kind == "paper":
        frame = in_the_papers_unit(frame)
    first = COMPARE_COLUMNS[kind]
    names = {"paper_ratio": "ratio"} if kind == "paper" else \
        {"model_ratio": "ratio", "model_verdict": "verdict"} if kind == "model" else {}
    frame = frame.rename(columns=names)  # short headers: a narrow table keeps its columns
    first = tuple(names.get(c, c) for c in first)
    keep = ("case_id", "metric", "value", "paper", "model", "other", "ratio", "verdict")
    return frame, first, keep


def _ranked_verdicts(frame) -> list[tuple[str, int]]:
    """Each verdict with its count of rows: those that fail first, then faster, energy, the explained, the
    agreeing; the most rows first among verdicts of no rank."""
    from harness import verdicts

    order = [*verdicts.FAILING, verdicts.FASTER, verdicts.MORE_ENERGY, verdicts.LESS_ENERGY, verdicts.EXPLAINED,
             verdicts.PAPER_CLOCK_DOUBTFUL, verdicts.CLOCK_NOT_PRINTED, verdicts.AGREES, verdicts.SAME,
             verdicts.FOR_CONTEXT, verdicts.NO_PAPER_FIGURE]
    counts = frame.verdict.replace("", "no model").value_counts()
    return sorted(counts.items(), key=lambda item: (order.index(item[0]) if item[0] in order else len(order),
                                                    -item[1]))


def _summary_lines(sides: str, ranked, gate_energy: bool, gate_speed: bool) -> list[str]:
    """The summary's lines: both sides, then one line per verdict saying whether it fails."""
    from harness import verdicts

    lines = sides.splitlines()
    for verdict, n in ranked:
        gloss = ""
        if verdict == verdicts.SLOWER and not gate_speed:
            gloss = " (another GPU model: reported, gating only with --gate-models)"
        elif verdict in verdicts.FAILING:
            gloss = " (fails: exit 3)"
        elif verdict == verdicts.MORE_ENERGY:
            gloss = " (fails: exit 3)" if gate_energy else " (power is not speed: --gate-energy gates on it)"
        lines.append(f"  {n:>5} {verdict}{gloss}")
    if not ranked:
        lines.append("  no rows")
    return lines


def _print_sections(sections, budget: int, every: bool, first, keep, wide: bool) -> None:
    """Each non-empty section under its heading, within `budget` lines in all unless `every` (a section cut
    short says how many rows it left)."""
    for rows, heading in sections:
        if rows.empty:
            continue
        shown = len(rows)
        while True:
            text, hidden = _rendered(rows.iloc[:shown], heading, first, keep, wide)
            if every or shown <= 1 or len(text.splitlines()) <= budget:
                break
            shown = max(1, shown * budget // max(len(text.splitlines()), 1) if shown > 8 else shown - 1)
        budget -= len(text.splitlines())
        click.echo(text, color=True)
        if hidden:
            click.echo(f"note: {len(hidden)} more column{'s' if len(hidden) > 1 else ''} ({', '.join(hidden)}): "
                       "--wide shows them", err=True)
        if shown < len(rows):
            click.echo(f"... {len(rows) - shown} more such rows: --disagreements shows every one")


def _rendered(rows, heading: str, first, keep, wide: bool) -> tuple[str, list[str]]:
    table = output.render(rows.reset_index(drop=True), "table", first, wide, keep=keep, below="note",
                          color=sys.stdout.isatty() and "NO_COLOR" not in __import__("os").environ)
    import textwrap

    heading = textwrap.fill(heading, width=output.terminal_width(), subsequent_indent="  ")
    return "\n".join(["", heading, table.text]), table.hidden
