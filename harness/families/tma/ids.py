"""TMA case ids read back: a canonical id (cases.py's docstring spells them) as its TmaCase, checked."""

from __future__ import annotations

import re

from harness.errors import SpecError
from harness.families.tma.cases import DEFAULT_PROMOTION, FIXED_IDS, TmaCase
from harness.families.tma.refusals import check

_TENSOR = re.compile(r"^(?P<red>cp\.reduce|cp)\.async\.bulk\.tensor\.(?P<rank>\d)d\."
                     r"(?P<dir>shared::cluster\.global|global\.shared::cta)(?P<add>\.add)?\.(?P<mode>tile|im2col)\.b(?P<bits>\d+)"
                     r"\.(?:box(?P<box>\d+(?:x\d+)*)|ch(?P<ch>\d+)\.px(?P<px>\d+))(?:\.sw(?P<sw>\d+))?"
                     r"(?:\.pitch(?P<pitch>\d+)(?:x(?P<plane>\d+))?)?(?P<gmap>\.gmap)?"
                     r"(?:\.l2promo(?P<promo>\d+))?"
                     r"(?:\.multicast(?P<mc>\d+))?$")
_BULK = re.compile(r"^cp\.async\.bulk\.(?P<dir>shared::cluster\.global|global\.shared::cta)\.(?P<bytes>\d+)B"
                   r"(?P<l2map>\.map\.l2)?$")


def parse(case_id: str) -> TmaCase:
    if match := _TENSOR.match(case_id):
        bits = int(match["bits"])
        if bits % 8:
            raise SpecError(f"{case_id!r}: element sizes are b8, b16, b32 or b64")
        op = "load" if match["dir"].startswith("shared") else "store"
        if bool(match["red"] == "cp.reduce") != bool(match["add"]) or (match["add"] and op == "load"):
            raise SpecError(f"{case_id!r}: a tensor reduction is written cp.reduce.async.bulk.tensor.Nd.global."
                            "shared::cta.add.tile (the add into global memory)")
        op = "reduce" if match["add"] else op
        im2col = match["mode"] == "im2col"
        if im2col != (match["ch"] is not None):
            raise SpecError(f"{case_id!r}: a tile copy names its box (box64x64), an im2col load its channels per "
                            "pixel and pixels per column (ch64.px128)")
        box = (int(match["ch"]), int(match["px"])) if im2col else tuple(int(b) for b in match["box"].split("x"))
        promotion = DEFAULT_PROMOTION if match["promo"] is None else int(match["promo"])
        case = TmaCase(op, int(match["rank"]), bits // 8, box, int(match["sw"] or 0), bool(match["gmap"]),
                       int(match["mc"] or 1), im2col=im2col, promotion=promotion, pitch=int(match["pitch"] or 0),
                       plane=int(match["plane"] or 0))
    elif match := _BULK.match(case_id):
        case = TmaCase("bulk" if match["dir"].startswith("shared") else "bulk-store", box=(int(match["bytes"]),),
                       l2map=bool(match["l2map"]))
    elif case_id in FIXED_IDS.values():
        case = TmaCase(next(op for op, spelled in FIXED_IDS.items() if spelled == case_id))
    else:
        raise SpecError(f"cannot parse case id {case_id!r}: expected e.g. "
                        "'cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128' "
                        "(see `bench list --suite tma`)")
    check(case)
    return case
