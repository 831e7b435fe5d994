"""Published figures (harness/db/data/references/) mapped to our case ids and metric names, ready
for the `reference_figures` table and the `reference_values` view. This module sits above the
families (it asks each how it names a figure) and hands the mapped figures to the store
(`shipped()`, `Store.open(..., references=...)`): the store never fetches them itself.

Mapping rules (docs/architecture.md, "Names"): each family names its counterpart of a figure
(Family.paper_case: which of our cases and metrics a source's "latency" or "throughput" is); this
module reads the files and applies what every family shares:
  - throughput in TFLOPS/TOPS is `throughput_tflops`, with the input initialisation the paper used
    (`condition`: zero or random inputs; only random matches our probes);
  - dtype names become PTX's (FP16 -> f16, FP8 -> e4m3: the authors' code uses E4M3, INT8 -> s8);
  - tables that both Luo et al. papers print are kept once (2402.13499 first);
  - article_*.csv rows are already in our metric names; citations.csv cites every source.
Every other row stays listed as unmapped, with the reason (`bench references --unmapped`).
"""

from __future__ import annotations

import csv
import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from harness import seed_chapter

DATA = Path(__file__).resolve().parent / "db" / "data" / "references"
LUO_FILES = ("luo2024_tables.csv", "luo2024_repo_logs.csv")
CHAPTER_FILES = (seed_chapter.FILE, "seed_cute_layouts.csv")  # the seed chapters, in the tables' columns
#                                            (harness/seed_chapter.py; the CuTe chapter's: the banks family's chapter.py)
ARTICLE_GLOB = "article_*.csv"  # figures already in our terms: instruction, shape, types, metric, value
CITATIONS_FILE = "citations.csv"
PTX_DTYPES = {"FP16": "f16", "BF16": "bf16", "TF32": "tf32", "FP8": "e4m3", "INT8": "s8", "FP32": "f32",
              "INT32": "s32", "FP64": "f64", "f16": "f16", "f32": "f32"}
# Figures that depend on the input data (through power and clock): they keep the paper's zero/random.
CONDITIONED = ("throughput_tflops", "sm_clock_mhz", "energy_efficiency", "power_mean_w")
_SHAPE = re.compile(r"^(?:sp\.)?m(\d+)n(\d+)k(\d+)$")


@dataclass(frozen=True)
class Reference:
    source: str  # paper id or article id
    citation: str
    table: str
    gpu: str
    case_id: str | None  # None: unmapped
    metric: str | None
    value: float
    unit: str
    condition: str | None  # zero/random inputs, where the paper says
    notes: str
    m: int | None = None
    n: int | None = None
    k: int | None = None
    dtype_a: str | None = None
    dtype_acc: str | None = None
    operands: str | None = None
    sparse: bool | None = None
    unmapped_reason: str | None = None
    also_in: str | None = None  # the duplicate table this row was de-duplicated against
    launch: dict | None = None  # the launch of the case the figure is of (a TMA latency from HBM), else None


def _condition(notes: str) -> str | None:
    match = re.search(r"init=(zero|random)", notes)
    return match.group(1) if match else None


def _counterpart(figure) -> tuple[str, str] | str | None:
    """(case id, metric) from the first family that names one; else the first family's reason (a string) why
    the figure it claims has none. A family that maps a figure wins over one that says it cannot (the gemm
    family's word on the worklog's CUDA-core step 1, which the ladder family maps)."""
    from harness.registry import FAMILIES

    reason = None
    for family in FAMILIES.values():
        found = family.paper_case(figure)
        if isinstance(found, tuple):
            return found
        if found and reason is None:
            reason = found
    return reason


def _data_counterpart(row: dict) -> tuple[dict | None, str | None]:
    """A data-movement figure (memory levels, TMA, distributed shared memory): the first family whose
    `paper_row` claims the row names our case, metric and the value in our units, or why it maps to
    nothing; (None, None) where no family claims it."""
    from harness.registry import FAMILIES

    for family in FAMILIES.values():
        found = family.paper_row(row)
        if isinstance(found, str):
            return None, found
        if found:
            return found, None
    return None, None


def _map_luo(row: dict) -> tuple[dict, str | None]:
    """(canonical fields, None) or ({}, why not). Data-movement rows may also set value, unit, gpu, notes
    and the launch the figure is of ({"source": "HBM"}: compare takes the measurement of that launch)."""
    from harness.families.base import PaperFigure

    instruction, metric = row["instruction"], row["metric"]
    data, reason = _data_counterpart(row)
    if data:
        return data, None
    if reason:
        return {}, reason
    if instruction == "na":
        if row["paper"] == seed_chapter.SOURCE:  # a figure of the chapter no family measures: why not
            return {}, seed_chapter.unmapped_reason(metric)
        return {}, "not an instruction figure (a device property or memory-system metric)"
    shape = _SHAPE.match(row["shape"])
    a, acc = PTX_DTYPES.get(row["dtype_ab"]), PTX_DTYPES.get(row["dtype_acc"])
    if not shape or not a or not acc:
        return {}, f"shape {row['shape']!r} or dtypes {row['dtype_ab']}/{row['dtype_acc']} not understood"
    m, n, k = map(int, shape.groups())
    ops = row["operand_mode"] if row["operand_mode"] in ("SS", "RS") else None
    figure = PaperFigure(instruction, m, n, k, a, acc, ops, row["sparse"] == "1", metric)
    found = _counterpart(figure)
    if isinstance(found, str):  # a family's word on why the figure has no counterpart
        return {}, found
    if found is None:
        return {}, f"no probe family for {instruction!r} {row['shape']} {metric!r} yet"
    case_id, ours = found
    return dict(case_id=case_id, metric=ours, m=m, n=n, k=k, dtype_a=a, dtype_acc=acc, operands=ops,
                sparse=figure.sparse), None


# Every published bandwidth in one unit at mapping time: decimal GB/s (10^9 bytes a second), our
# bandwidth_gbps. The authors' TMA logs print GiB/s (their code divides bytes by 1024^3; the CSV says so in its
# unit column); 2402.13499 Table V's global-memory figure (1861.5) is decimal GB/s.
GBPS_PER_UNIT = {"GB/s": 1.0, "GiB/s": 2**30 / 1e9, "TB/s": 1000.0}
BANDWIDTH_UNIT = "GB/s"


def to_gbps(value: float, unit: str) -> float:
    """A published bandwidth in decimal GB/s (GBPS_PER_UNIT); ValueError for a unit that is not a bandwidth."""
    if unit not in GBPS_PER_UNIT:
        raise ValueError(f"{unit!r} is not a bandwidth unit ({', '.join(GBPS_PER_UNIT)})")
    return float(value) * GBPS_PER_UNIT[unit]


@cache
def _paper_rooflines() -> dict[str, float]:
    """Each paper GPU's global-memory throughput as the authors measured it (2402.13499 Table V), in GB/s."""
    return {row["gpu"]: to_gbps(row["value"], row["unit"]) for row in _read(LUO_FILES[0])
            if row["metric"] == "bandwidth_global" and row["paper"] == "2402.13499v1"}


@cache
def _paper_sm_counts() -> dict[str, int]:
    """SMs of each GPU the papers measured, as their device-property tables print them."""
    return {row["gpu"]: int(float(row["value"])) for row in _read(LUO_FILES[0]) if row["metric"] == "sm_count"}


def _read(name: str) -> list[dict]:
    with (DATA / name).open(newline="") as f:
        return list(csv.DictReader(f))


def _citations() -> dict[str, str]:
    return {row["source"]: row["citation"] for row in _read(CITATIONS_FILE)}


def _article_files() -> list[str]:
    return sorted(path.name for path in DATA.glob(ARTICLE_GLOB))


@cache
def load() -> tuple[Reference, ...]:
    from harness.families.base import PaperFigure

    citations = _citations()

    """Every shipped figure, mapped where possible, duplicates across the two papers removed."""
    refs: list[Reference] = []
    seen: dict[tuple, int] = {}
    for name in LUO_FILES + CHAPTER_FILES:
        for row in _read(name):
            fields, reason = _map_luo(row)
            if row.get("value_high"):  # a range: its low end, the high end in the notes (seed_chapter.RANGE)
                fields["notes"] = (seed_chapter.range_note(row["value"], row["value_high"], row["unit"])
                                   + fields.get("notes", row["notes"])).strip()
            if fields.pop("of_paper_roofline", False):  # over the authors' own global-memory figure, both in GB/s
                roofline, gbps = _paper_rooflines()[fields["gpu"]], to_gbps(row["value"], row["unit"])
                fields.update(value=gbps / roofline, unit="ratio",
                              notes=f"{row['value']} {row['unit']} = {gbps:.1f} GB/s over {roofline:g} GB/s (the same "
                                    f"authors' float4 global-memory throughput, 2402.13499 Table V; both decimal). "
                                    f"{row['notes']}".strip())
            elif row["unit"] in GBPS_PER_UNIT and row["unit"] != BANDWIDTH_UNIT and "value" not in fields:
                gbps = to_gbps(row["value"], row["unit"])  # mapped or not, a bandwidth is listed in GB/s
                fields.update(value=gbps, unit=BANDWIDTH_UNIT,
                              notes=f"printed {row['value']} {row['unit']} = {gbps:.1f} GB/s. {row['notes']}".strip())
            wall_mhz = fields.pop("wall_clock_mhz", None)
            if wall_mhz:  # cycles that are wall time x a clock: the time itself, in ns (compare's basis "ns")
                ns = float(row["value"]) * 1e3 / wall_mhz
                fields.update(value=ns, unit="ns",
                              notes=f"printed {row['value']} {row['unit']} = wall time x {wall_mhz:g} MHz: {ns:.1f} ns; "
                                    f"compared as time. {row['notes']}".strip())
            if fields.pop("per_sm", False):  # a whole-GPU figure compared per SM: over the paper GPU's SMs
                sms = _paper_sm_counts()[row["gpu"]]
                fields.update(value=float(row["value"]) / sms,
                              notes=f"{row['value']} {row['unit']} for the whole GPU / {sms} SMs. {row['notes']}".strip())
            source = row["paper"].split(" ")[0] if row["paper"].startswith("repo") else row["paper"]
            condition = _condition(row["notes"]) if fields.get("metric") in CONDITIONED else None
            launch = fields.pop("launch", None)
            ref = Reference(source=row["paper"], citation=citations.get(source, row["paper"]),
                            table=row["table_or_figure"], gpu=fields.pop("gpu", row["gpu"]),
                            value=float(fields.pop("value", row["value"])), unit=fields.pop("unit", row["unit"]),
                            notes=fields.pop("notes", row["notes"]), condition=condition, launch=launch,
                            unmapped_reason=reason, case_id=fields.pop("case_id", None),
                            metric=fields.pop("metric", None), **fields)
            if ref.case_id:
                key = (ref.gpu, ref.case_id, ref.metric, ref.condition, str(ref.launch), ref.value,
                       seed_chapter.figure_range(ref.notes))  # a range is not the point at its low end
                if key in seen:  # the same figure printed again in the second paper
                    first = refs[seen[key]]
                    if first.also_in is None:
                        refs[seen[key]] = Reference(**{**first.__dict__, "also_in": f"{ref.source} {ref.table}"})
                    continue
                seen[key] = len(refs)
            refs.append(ref)
    for name in _article_files():  # rows already in our metric names
        for row in _read(name):
            shape = _SHAPE.match(row["shape"])
            m, n, k = map(int, shape.groups())
            a, acc = PTX_DTYPES[row["dtype_ab"]], PTX_DTYPES[row["dtype_acc"]]
            ops = row["operand_mode"] if row["operand_mode"] in ("SS", "RS") else None
            found = _counterpart(PaperFigure(row["instruction"], m, n, k, a, acc, ops, False, row["metric"]))
            reason = found if isinstance(found, str) else f"no probe family for {row['instruction']!r} yet"
            found = None if isinstance(found, str) else found
            refs.append(Reference(
                source=row["source"], citation=citations[row["source"]], table=f"{row['metric']} against N",
                gpu=row["gpu"], case_id=found[0] if found else None, metric=row["metric"], value=float(row["value"]),
                unit=row["unit"], condition=None, notes=row["notes"], m=m, n=n, k=k, dtype_a=a, dtype_acc=acc,
                operands=ops, sparse=False,
                unmapped_reason=None if found else reason))
    return tuple(refs)


def mapped() -> list[Reference]:
    return [r for r in load() if r.case_id]


def unmapped() -> list[Reference]:
    return [r for r in load() if not r.case_id]


def data_hash() -> str:
    """Changes whenever the shipped figures or the mapping code change: the database reloads."""
    material = b"".join((DATA / name).read_bytes() for name in (*LUO_FILES, *CHAPTER_FILES, *_article_files(),
                                                                CITATIONS_FILE))
    material += Path(__file__).read_bytes() + Path(seed_chapter.__file__).read_bytes()
    material += _mapping_code()
    return hashlib.sha256(material).hexdigest()[:16]


def _mapping_code() -> bytes:
    """The families' mapping hooks (paper_case, paper_row) where a family gives them (the contract's
    defaults map nothing and are not hashed), with the functions and modules of the family's own package
    each calls by name (the seed chapter's rows, mapped in a family's chapter module): a change to one
    remaps the figures."""
    import inspect

    from harness.families.base import overrides
    from harness.registry import FAMILIES

    hooks = [hook for f in FAMILIES.values() for name, hook in (("paper_case", f.paper_case), ("paper_row", f.paper_row))
             if overrides(f, name)]
    code = []
    for hook in hooks:
        code.append(inspect.getsource(hook))
        package = hook.__module__
        for value in inspect.getclosurevars(hook).globals.values():
            if (inspect.isfunction(value) and value.__module__.startswith(package)) or (
                    inspect.ismodule(value) and value.__name__.startswith(package + ".")):
                code.append(inspect.getsource(value))
    return "".join(code).encode()


@dataclass(frozen=True)
class ReferenceSet:
    """The mapped figures and the digest that says when a database holds an older set."""

    digest: str
    figures: tuple[Reference, ...]


def shipped() -> ReferenceSet:
    return ReferenceSet(data_hash(), load())
