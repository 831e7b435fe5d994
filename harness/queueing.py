"""Closed queueing networks solved by mean-value analysis (MVA), for the families' models of copies in flight.

    exact_mva       one class of `population` customers cycling through FCFS queues (each a service demand
                    in cycles per cycle of the customer) and a pure delay: the exact recursion over the
                    population (Reiser and Lavenberg 1980): R_i(n) = D_i (1 + Q_i(n - 1)), X(n) = n / (Z + sum R),
                    Q_i(n) = X(n) R_i(n).
    symmetric_mva   `classes` identical classes of `population` customers each: every class has a queue of
                    its own (demand `own`), all share one queue (demand `shared`) and a delay; the Bard-Schweitzer
                    approximation (Schweitzer 1979), whose arrival sees the queue of the customer's own class less
                    one customer's share: own R = own (1 + Q_own (n - 1) / n), shared R = shared (1 + C Q - Q / n).

The TMA streams (harness/families/tma/fitting.py) are the second: a class is a block of one SM, its queue the
block's issue loop, the shared queue the SM's share of the memory system's bandwidth, the delay the rest of a
copy's unloaded latency. The DSMEM chases (harness/families/dsmem/fitting.py) are the first: one SM's requests
in flight through its share of the DSMEM stream and the hop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Solution:
    throughput: float  # customers (copies) per cycle, of one class
    own: float  # cycles a customer spends at its class's queue, waiting and served
    shared: float  # cycles at the shared queue, waiting and served


def exact_mva(demands: Sequence[float], delay: float, population: int) -> float:
    """Throughput (customers per unit of time) of one class of `population` customers through FCFS queues of
    the given service demands and a pure `delay`: exact MVA."""
    if population < 1 or delay < 0 or any(d < 0 for d in demands):
        raise ValueError(f"MVA needs a population of at least 1 and non-negative demands (got {population}, "
                         f"{list(demands)}, delay {delay})")
    if len(demands) == 1:  # the models' usual network (one queue), without the lists: the same operations
        (demand,) = demands
        queue, throughput = 0.0, 0.0
        for n in range(1, population + 1):
            residence = demand * (1 + queue)
            throughput = n / (delay + (0.0 + residence))  # sum() of one float: 0.0 + it
            queue = throughput * residence
        return throughput
    queues = [0.0] * len(demands)
    throughput = 0.0
    for n in range(1, population + 1):
        residence = [d * (1 + q) for d, q in zip(demands, queues)]
        throughput = n / (delay + sum(residence))
        queues = [throughput * r for r in residence]
    return throughput


def symmetric_mva(classes: int, population: int, own: float, shared: float, delay: float,
                  tolerance: float = 1e-10, iterations: int = 100_000) -> Solution:
    """`classes` identical classes of `population` customers, each class with a queue of its own (service demand
    `own`), all sharing one queue (`shared`) and a pure `delay`: Bard-Schweitzer approximate MVA, iterated to a
    fixed point (damped by half a step)."""
    if classes < 1 or population < 1 or own < 0 or shared < 0 or delay < 0:
        raise ValueError(f"MVA needs at least 1 class of at least 1 customer and non-negative demands (got "
                         f"{classes}, {population}, {own}, {shared}, {delay})")
    n = population
    throughput = n / (delay + own + shared)
    q_own, q_shared = throughput * own, throughput * shared
    for _ in range(iterations):
        r_own = own * (1 + q_own * (n - 1) / n)
        r_shared = shared * (1 + classes * q_shared - q_shared / n)
        new = 0.5 * throughput + 0.5 * n / (delay + r_own + r_shared)
        q_own, q_shared = new * r_own, new * r_shared
        if abs(new - throughput) <= tolerance * throughput:
            return Solution(new, r_own, r_shared)
        throughput = new
    raise ArithmeticError(f"symmetric MVA did not converge in {iterations} iterations")
