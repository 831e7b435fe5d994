"""The verdicts of a comparison (`bench compare`, harness.analysis.compare): one vocabulary that the
comparison writes and the CLI, the reports, the site, the families' sections and the terminal's
colours read. Plain strings, so a DataFrame column of them is a column of text."""

# Against the paper (column `verdict`; docs/architecture.md, "Comparing with the paper").

AGREES = "agrees"  # within the measurement's spread plus the tolerance (harness/paper.py)
DISAGREES = "DISAGREES"  # beyond it, with no reason found
EXPLAINED = "explained"  # beyond it, for a reason the family names (Family.explain; the note says it)
PAPER_CLOCK_DOUBTFUL = "paper clock doubtful"  # the figure is below ours per cycle at the clock printed beside it
CLOCK_NOT_PRINTED = "clock not printed"  # no clock printed, and the figure is possible at one up to the maximum
FOR_CONTEXT = "for context"  # an energy figure: another GPU and power limit, never judged
NO_PAPER_FIGURE = "no paper figure"  # a measurement the paper has no figure of

# Against the model (column `model_verdict`): AGREES or DISAGREES, and NO_MODEL where it predicts nothing.
NO_MODEL = ""

# Run against run (column `verdict`): beyond the noise of both sides, or not.
SAME = "same"
FASTER = "faster"
SLOWER = "slower"
# Run against run, a power or energy metric (metrics basis "energy"): power follows the board, its power
# limit and its inputs, not the instruction's speed, so these are their own class and fail a comparison
# only when asked (`bench compare --gate-energy`).
MORE_ENERGY = "more energy"
LESS_ENERGY = "less energy"

# Every verdict against the paper, in the order a summary counts them (the site's table).
AGAINST_PAPER = (AGREES, EXPLAINED, PAPER_CLOCK_DOUBTFUL, CLOCK_NOT_PRINTED, FOR_CONTEXT, DISAGREES)
# A comparison fails (`bench compare` exits 3) when a row has one of these.
FAILING = (DISAGREES, SLOWER)
# ... and also these, when energy gates (`bench compare --gate-energy`).
FAILING_ENERGY = (MORE_ENERGY,)
# The rows that differ beyond the noise with no reason given (`bench compare --disagreements`, and
# the rows `bench compare` shows by default): performance first, then energy.
DIFFERING = FAILING + (FASTER,) + (MORE_ENERGY, LESS_ENERGY)
