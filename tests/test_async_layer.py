"""ptx/async.cuh, the asynchronous-copy layer: every wrapper assembles for sm_90a (a wrapper no probe
calls yet is never emitted, so ptxas would not see a typo in its asm), and each tensor or bulk copy is
the one SASS instruction its name says."""

import re

from harness.build.compile import compile_probe
from harness.build.render import ProbeSource, _with_common, template_dir
from harness.build.sass import disassemble

WRAPPER = re.compile(r"__device__ __forceinline__ (?:void|bool|u32) (\w+)\(([^)]*)\)")
ARGUMENT = {"int": "c", "unsigned short": "h", "u32": "s", "const void*": "g", "void*": "g"}


def _every_wrapper_once() -> tuple[list[str], str]:
    """A kernel that calls each wrapper of async.cuh once, chosen by `which` (templates with <1>)."""
    header = (template_dir() / "async.cuh").read_text()
    templates = set(re.findall(r"template <int N>\n__device__ __forceinline__ void (\w+)", header))
    names, calls = [], []
    for i, (name, params) in enumerate(WRAPPER.findall(header)):
        types = [p.strip().rsplit(" ", 1)[0].replace(" *", "*") for p in params.split(",") if p.strip()]
        args = ", ".join(ARGUMENT[t] for t in types)
        calls.append(f"  if (which == {i}) {name}{'<1>' if name in templates else ''}({args});")
        names.append(name)
    body = ('#include "async.cuh"\n'
            'extern "C" __global__ void __cluster_dims__(2, 1, 1) every_wrapper(int which, char* global) {\n'
            "  __shared__ __align__(128) unsigned char buf[4096];\n"
            "  const u32 s = smem_addr(buf) + 8 * threadIdx.y;\n"
            "  void* g = global + 128 * threadIdx.x;\n"
            "  const int c = threadIdx.x;\n"
            "  const unsigned short h = threadIdx.y;\n" + "\n".join(calls) + "\n}\n")
    return names, _with_common(body)


def test_every_wrapper_assembles_to_its_instruction(shared_cache):
    names, text = _every_wrapper_once()
    assert len(names) == len(set(names)) > 50
    build = compile_probe(ProbeSource("async-layer", text))
    sass = [i.split()[1] if i.startswith("@") else i.split()[0] for i in disassemble(build.cubin_path)["every_wrapper"]]
    expected = {"bulk_load": "UBLKCP.S.G", "bulk_store": "UBLKCP.G.S", "bulk_prefetch_l2": "UBLKPF.L2",
                "cp_async_cg_16": "LDGSTS.E.BYPASS.128", "mbarrier_arrive_expect_tx": "SYNCS.ARRIVE.TRANS64",
                "mbarrier_arrive": "SYNCS.ARRIVE.TRANS64.A1T0", "mbarrier_arrive_cluster": "SYNCS.ARRIVE.TRANS64.RED.A1T0"}
    for name in names:
        if match := re.fullmatch(r"tma_(load|store|reduce_add|prefetch)_(im2col_)?(\d)d(_multicast)?", name):
            copy, im2col, rank, multicast = match.groups()
            op = {"load": "UTMALDG", "store": "UTMASTG", "reduce_add": "UTMAREDG", "prefetch": "UTMAPF.L2"}[copy]
            expected[name] = (f"{op}.{rank}D" + (".IM2COL" if im2col else "") + (".MULTICAST" if multicast else "")
                              + (".ADD" if copy == "reduce_add" else ""))
    assert len(expected) == 7 + 5 * 5 + 2 * 3  # loads, multicasts, stores, reductions, prefetches; im2col ones
    for name, mnemonic in expected.items():
        assert sass.count(mnemonic) == 1, (name, mnemonic)
