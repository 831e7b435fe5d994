"""Distributed shared memory cases: what each measures, its canonical id, and what is legal.

Ids spell the PTX instruction (without the operands) and add what it does not say:

    ld.shared::cluster.u32.cluster4              loads from another CTA's shared memory (a cluster of 4)
    ld.shared::cluster.u32.cluster8.spread       ... each warp from another CTA
    st.shared::cluster.u32.cluster4              stores to another CTA's shared memory
    st.shared::cluster.u32.cluster8.spread       ... each warp into another CTA
    ld.shared::cluster.u32.cluster4.chase.ring   the papers' pattern: every thread chases through the next
                                                 CTA (.pair, .broadcast, .local: CHASE_PATTERNS)
    ld.shared::cluster.u32.cluster16.map         the SM-to-SM map: every CTA chases every other CTA of its
                                                 cluster in turn, by %smid (the `maps` suite, maps.py)

These ids, and the parameters below (op, cluster, spread, pattern: names and values), are the ones the
`tma` family gave these cases before they had a family of their own (schema 11,
harness/migrations/versions/0011_dsmem_family.py); stored rows key on them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from harness.errors import IllegalShapeError, SpecError
from harness.spec import Case

CLUSTERS = (2, 4, 8, 16)  # CTAs per cluster; 8 is the portable most, 16 a non-portable size (launched at run time)
PORTABLE_CLUSTER = 8
OPS = ("dsmem", "dsmem-store", "dsmem-chase", "dsmem-map")  # loads from, stores to, another CTA; the papers'
# chase; the SM-to-SM map
# The papers' DSMEM patterns (dsmem-chase): whose shared memory each CTA's threads chase through.
CHASE_PATTERNS = ("ring", "pair", "broadcast", "local")
INSTRUCTIONS = {"dsmem": "ld.shared::cluster.u32", "dsmem-store": "st.shared::cluster.u32",
                "dsmem-chase": "ld.shared::cluster.u32", "dsmem-map": "ld.shared::cluster.u32"}

_ID = re.compile(r"^(?P<op>ld|st)\.shared::cluster\.u32\.cluster(?P<cluster>\d+)(?P<spread>\.spread)?"
                 r"(?:\.chase\.(?P<pattern>\w+)|(?P<map>\.map))?$")


@dataclass(frozen=True)
class DsmemCase(Case):
    family: ClassVar[str] = "dsmem"
    op: str  # one of OPS
    cluster: int = 2  # CTAs per cluster
    spread: bool = False  # each warp reads (writes) another CTA; the latency goes to the last rank
    pattern: str = ""  # dsmem-chase: ring, pair, broadcast or local (CHASE_PATTERNS)

    @property
    def instruction(self) -> str:
        return INSTRUCTIONS[self.op]

    @property
    def base_id(self) -> str:
        return (f"{self.instruction}.cluster{self.cluster}" + (".spread" if self.spread else "")
                + (f".chase.{self.pattern}" if self.op == "dsmem-chase" else "")
                + (".map" if self.op == "dsmem-map" else ""))

    def columns(self) -> dict[str, object]:
        return {"instruction": self.instruction}


def parse(case_id: str) -> DsmemCase:
    match = _ID.match(case_id)
    if match is None:
        raise SpecError(f"cannot parse case id {case_id!r}: expected e.g. 'ld.shared::cluster.u32.cluster4', "
                        "'st.shared::cluster.u32.cluster8.spread' or 'ld.shared::cluster.u32.cluster4.chase.ring' "
                        "(see `bench list --suite dsmem`)")
    if match["pattern"] is not None and (match["op"] != "ld" or match["spread"]):
        raise SpecError(f"{case_id!r}: a chase pattern is written ld.shared::cluster.u32.clusterC.chase.PATTERN")
    if match["map"] and (match["op"] != "ld" or match["spread"]):
        raise SpecError(f"{case_id!r}: the SM-to-SM map is written ld.shared::cluster.u32.clusterC.map")
    op = ("dsmem-chase" if match["pattern"] is not None else "dsmem-map" if match["map"] else
          "dsmem" if match["op"] == "ld" else "dsmem-store")
    case = DsmemCase(op, cluster=int(match["cluster"]), spread=bool(match["spread"]), pattern=match["pattern"] or "")
    check(case)
    return case


def check(case: DsmemCase) -> None:
    """One line for anything the hardware or the driver refuses, before anything runs."""
    if case.op not in OPS:
        raise SpecError(f"unknown DSMEM operation {case.op!r}: expected one of {', '.join(OPS)}")
    if case.cluster not in CLUSTERS:
        raise IllegalShapeError(f"{case}: clusters of {', '.join(map(str, CLUSTERS))} CTAs, not {case.cluster}")
    if case.spread and case.cluster < 4:
        raise IllegalShapeError(f"{case}: .spread needs 4 CTAs or more (in 2 the next CTA is the only other one)")
    if case.op == "dsmem-chase" and case.pattern not in CHASE_PATTERNS:
        raise IllegalShapeError(f"{case}: chase patterns are {', '.join(CHASE_PATTERNS)}, not {case.pattern!r}")
    if case.op != "dsmem-chase" and case.pattern:
        raise IllegalShapeError(f"{case}: a pattern is a chase's ({', '.join(CHASE_PATTERNS)})")
    if case.op == "dsmem-map" and (case.spread or case.pattern):
        raise IllegalShapeError(f"{case}: the map has every CTA chase every other: no .spread, no pattern")
    if case.op == "dsmem-chase" and case.spread:
        raise IllegalShapeError(f"{case}: .spread is a stream's access pattern, not a chase's")


def from_params(params: dict) -> DsmemCase:
    """The case of a stored `cases.params` dict, written by this family or, before schema 11, by the tma
    family (whose dicts also hold rank, elem, box, swizzle, gmap, im2col and promotion: TMA's parameters,
    at their defaults for these cases; docs/database.md)."""
    return DsmemCase(params["op"], cluster=int(params["cluster"]), spread=bool(params["spread"]),
                     pattern=params.get("pattern") or "")


def map_cases() -> list[DsmemCase]:
    """The `maps-dsmem` suite (part of `maps`): the SM-to-SM map at every cluster size (each size lands its
    clusters on other SMs: together they cover more pairs of SMs)."""
    return [DsmemCase("dsmem-map", cluster=c) for c in CLUSTERS]


def all_cases() -> list[DsmemCase]:
    return cases() + map_cases()


def cases() -> list[DsmemCase]:
    """The `dsmem` suite (part of `tma`): loads and stores, to the next CTA and spread over the cluster,
    at every cluster size; the papers' chase patterns."""
    out = [DsmemCase("dsmem", cluster=c) for c in CLUSTERS]
    out += [DsmemCase("dsmem", cluster=c, spread=True) for c in CLUSTERS if c >= 4]
    out += [DsmemCase("dsmem-store", cluster=c) for c in CLUSTERS]
    out += [DsmemCase("dsmem-store", cluster=c, spread=True) for c in CLUSTERS if c >= 4]
    out += [DsmemCase("dsmem-chase", cluster=c, pattern="ring") for c in CLUSTERS]
    out += [DsmemCase("dsmem-chase", cluster=c, pattern=p) for c, p in ((4, "pair"), (4, "broadcast"), (16, "broadcast"),
                                                                          (2, "local"))]
    return out
