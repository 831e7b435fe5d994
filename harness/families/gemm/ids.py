"""GEMM case ids read back: the grammar (ID, cases.py's docstring shows it) and parse, which refuses what check
(refusals.py) refuses and any id that is not the case's own spelling."""

from __future__ import annotations

import re

from harness.errors import SpecError
from harness.families.gemm.cases import PIPELINE_GROUP, GemmCase, LibraryCase
from harness.families.gemm.refusals import check

ID = re.compile(r"^(?P<library>cublaslt|cublas|gemm)\.(?P<dtype>[a-z0-9]+(?:-[a-z0-9]+)?)\.(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)"
                r"(?P<fast>\.fastaccum)?(?P<lscaling>\.blockscale)?"
                r"(?:\.tile(?P<bm>\d+)x(?P<bn>\d+)x(?P<bk>\d+)\.s(?P<stages>\d+)\.wg(?P<wg>\d+)(?P<rb>\.setmaxnreg)?"
                r"\.cluster(?P<cluster>\d+)\.(?P<sched>grid|persistent)-(?P<order>[a-z]+)\.(?P<epi>[a-z]+)"
                r"(?:\.sms(?P<sms>\d+))?(?:\.(?P<schedule>pingpong))?(?:\.splitk(?P<splits>\d+))?(?:\.streamk(?P<streamk>\d+))?(?P<tight>\.tighta)?(?:\.(?P<promotion>overlap|pipelined|staggered|carried|deferred|offset)(?:-g(?P<group>\d+))?)?(?P<scaling>\.blockscale)?)?"
                r"(?:\.inputs-(?P<inputs>[a-z]+))?(?:\.(?P<protocol>burst))?(?:\.(?P<placement>cold))?$")


def parse(case_id: str) -> GemmCase:
    match = ID.match(case_id)
    if (not match or (match["library"] != "gemm") != (match["bm"] is None) or (match["fast"] and match["bm"])
            or (match["lscaling"] and match["bm"])):
        raise SpecError(f"cannot parse GEMM case id {case_id!r}: expected e.g. "
                        "'gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore' "
                        "or 'cublas.f16.8192x8192x8192' or 'cublaslt.e4m3.8192x8192x8192[.fastaccum]'")
    g = match.groupdict()
    common = dict(dtype=g["dtype"], m=int(g["m"]), n=int(g["n"]), k=int(g["k"]), inputs=g["inputs"] or "random",
                  protocol=g["protocol"] or "sustained", placement=g["placement"] or "warm")
    if g["library"] != "gemm":
        case = LibraryCase(**common, fast_accum=bool(g["fast"]), scaling="block" if g["lscaling"] else "tensor")
    else:
        case = GemmCase(**common, bm=int(g["bm"]), bn=int(g["bn"]), bk=int(g["bk"]), stages=int(g["stages"]),
                        consumers=int(g["wg"]), rebalance=bool(g["rb"]), cluster=int(g["cluster"]),
                        persistent=g["sched"] == "persistent", order=g["order"], epilogue=g["epi"],
                        grid_sms=int(g["sms"] or 0), schedule=g["schedule"] or "cooperative",
                        splits=int(g["splits"] or 1), streamk=int(g["streamk"] or 0),
                        promotion=g["promotion"] or "serial", tight_a=bool(g["tight"]), group=int(g["group"] or PIPELINE_GROUP),
                        scaling="block" if g["scaling"] else "tensor")
    check(case)
    if case.case_id != case_id:
        raise SpecError(f"GEMM case id {case_id!r} is not canonical: {case.case_id!r}")
    return case
