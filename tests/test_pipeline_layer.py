"""The pipeline layer below the kernel families: ptx/warpgroup.cuh and ptx/pipeline.cuh on the device,
harness/families/pipeline.py (the skeleton's case, its counters, its kernel structs) on the host.

Expectations come from outside the code under test: the descriptor's fields from the wgmma family's host encoder
(itself tested against the PTX ISA's table in test_descriptors.py), a struct's layout from the compiler's
offsetof, illegal arguments from the compiler's refusal."""

import re
import shutil
import subprocess

from pathlib import Path

import numpy as np
import pytest

from harness.build.compile import compile_probe
from harness.build.render import ProbeSource, _with_common, template_dir
from harness.build.sass import disassemble
from harness.errors import CompileError, SpecError
from harness.families.gemm import FAMILY as GEMM
from harness.families.gemm.ids import parse
from harness.families.gemm.problem import PROBLEM
from harness.families.pipeline import PIPELINE_COUNTERS, KernelStruct, render_counters
from harness.families.wgmma.descriptors import SmemDescriptor


def _compile(body: str, name: str):
    return compile_probe(ProbeSource(name, _with_common(body)))


def test_descriptor_fields_match_the_wgmma_familys_encoder(cache_dir):
    """smem_descriptor_fields (device) and SmemDescriptor.encode (host) give the same 64 bits: the compiler checks
    each pair with a static_assert, so a field moved on either side fails the build."""
    swizzles = {"none": "Swizzle::None", "128B": "Swizzle::B128", "64B": "Swizzle::B64", "32B": "Swizzle::B32"}
    cases = [SmemDescriptor(0x1230, 16, 1024, 0, "128B"), SmemDescriptor(0x3FFF0, 128, 256, 0, "none"),
             SmemDescriptor(0x400, 0x3FFF0, 0x3FFF0, 7, "32B"), SmemDescriptor(16, 32, 64, 3, "64B")]
    asserts = "\n".join(
        f"static_assert(smem_descriptor_fields({d.start_address}u, {d.leading_byte_offset}u, {d.stride_byte_offset}u, "
        f"{d.base_offset}u, {swizzles[d.swizzle]}) == {d.encode()}ull, \"descriptor {i}\");"
        for i, d in enumerate(cases))
    build = _compile(f'#include "warpgroup.cuh"\n{asserts}\nextern "C" __global__ void k() {{}}\n', "descriptor-fields")
    assert build.cubin_path.is_file()
    # and a wrong expectation does fail: the check can fail
    wrong = asserts.replace(f"== {cases[0].encode()}ull", f"== {cases[0].encode() ^ (1 << 62)}ull")
    with pytest.raises(CompileError, match="descriptor 0"):
        _compile(f'#include "warpgroup.cuh"\n{wrong}\nextern "C" __global__ void k() {{}}\n', "descriptor-wrong")


@pytest.mark.parametrize("call, message", [
    ("wgmma_wait_group<8>()", "0..7 groups"),
    ("setmaxnreg_inc<20>()", "24..256 registers"),
    ("setmaxnreg_dec<100>()", "a multiple of 8"),
    ("(void)smem_descriptor<Swizzle::B128, 8, 1024>(0u)", "LBO"),
])
def test_illegal_compile_time_arguments_fail_the_build(cache_dir, call, message):
    body = f'#include "warpgroup.cuh"\nextern "C" __global__ void k() {{ {call}; }}\n'
    with pytest.raises(CompileError, match=message):
        _compile(body, f"illegal-{abs(hash(call))}")


def test_each_warpgroup_wrapper_is_its_instruction(cache_dir):
    body = ('#include "warpgroup.cuh"\n'
            'extern "C" __global__ void __launch_bounds__(384, 1) k(int id) {\n'  # setmaxnreg needs the bound
            "  wgmma_fence(); wgmma_commit_group(); wgmma_wait_group<1>();\n"
            "  named_barrier_arrive(id, 256); named_barrier_sync(id + 1, 128);\n"
            "  if (threadIdx.x < 128) setmaxnreg_dec<40>(); else setmaxnreg_inc<232>();\n}\n")
    sass = disassemble(_compile(body, "warpgroup-wrappers").cubin_path)["k"]
    text = "\n".join(sass)
    for mnemonic in ("WARPGROUP.ARRIVE", "WARPGROUP.DEPBAR.LE gsb0, 0x1", "BAR.ARV", "BAR.SYNC",
                     "USETMAXREG.DEALLOC", "USETMAXREG.TRY_ALLOC"):
        assert mnemonic in text, (mnemonic, text)


def _nvcc(body: str, tmp_path) -> subprocess.CompletedProcess:
    """nvcc (CUDA 13, sm_90a) on `body` after <cstddef>: NVRTC 13.0 has no offsetof, nvcc's front end does (a kernel
    argument's layout is the host's and the device's alike: the CUDA ABI)."""
    source = tmp_path / "layout.cu"
    source.write_text("#include <cstddef>\n" + body + '\nextern "C" __global__ void k() {}\n')
    return subprocess.run(["nvcc", "-arch=sm_90a", "-std=c++17", "-c", "-o", str(tmp_path / "layout.o"), str(source)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc (the CUDA toolkit) on this machine")
def test_a_kernel_struct_is_laid_out_as_the_compiler_lays_it(tmp_path):
    """The NumPy view of the GEMM's Problem (and of an odd struct) has the compiler's offsets and size."""
    odd = KernelStruct("Odd", (("n", "i32"), ("map", "map"), ("p", "u64"), ("k", "i32")))
    for struct in (PROBLEM, odd):
        done = _nvcc(struct.render() + "\n" + struct.check_layout_source(), tmp_path)
        assert done.returncode == 0, done.stderr
        dtype = struct.dtype()
        assert dtype.itemsize == struct.itemsize and dtype.itemsize % 64 == 0
        assert {name: dtype.fields[name][1] for name in dtype.names} == struct.offsets()
    assert PROBLEM.itemsize == 448  # 3 maps of 128 bytes, an address, four ints, to a multiple of 64
    broken = _nvcc(PROBLEM.render() + "\n" + PROBLEM.check_layout_source().replace("== 384", "== 388"), tmp_path)
    assert broken.returncode != 0 and "Problem.c_ptr: offset" in broken.stderr


def test_the_counters_render_in_their_declared_order():
    assert render_counters() == ("enum PipelineCounter { FULL_WAIT, EMPTY_WAIT, EPILOGUE, MAINLOOP, TILES, KBLOCKS, "
                                 "PIPELINE_COUNTERS };")
    assert PIPELINE_COUNTERS.index("mainloop") == 3


def test_headers_are_inlined_once_with_what_they_include():
    case = parse("gemm.f16.2048x2048x2048.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore")
    from harness.build.render import render

    text = render(case, GEMM).text
    for header in ("async.cuh", "warpgroup.cuh", "pipeline.cuh"):
        assert text.count(f"// ---- {header} ----") == 1, header
    assert not re.search(r'^#include "', text, re.MULTILINE)  # nothing left for NVRTC to find on a path
    assert len(re.findall(r'^#include "', (template_dir() / "pipeline.cuh").read_text(), re.MULTILINE)) == 2


PINGPONG = "gemm.f16.8192x8192x8192.tile128x128x64.s4.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.pingpong"


def test_a_pingpong_case_round_trips_and_holds_a_whole_tile_per_warpgroup():
    case = parse(PINGPONG)
    assert case.schedule == "pingpong" and case.wg_rows == 128 and case.accumulators == 128
    # two output tiles (one per consumer warpgroup, their epilogues overlap) beside four 32 KiB stages
    assert case.smem_bytes() == 4 * 32768 + 2 * 128 * 128 * 2 + 1024
    expectation = GEMM.sass_expectation(case)
    assert expectation.executes == "8 x HGMMA.64x128x16.F32 per k-block"  # 4 k steps x 2 m64 blocks, one warpgroup
    assert "SCHEDULE_PINGPONG" in GEMM.template_params(case)["schedule"]


@pytest.mark.parametrize("case_id, why", [
    ("gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.pingpong",
     "256 f32 accumulators"),
    ("gemm.f16.8192x8192x8192.tile128x128x64.s4.wg2.setmaxnreg.cluster2.grid-grouped.tmastore.pingpong",
     "persistent"),
    ("gemm.f16.8192x8192x8192.tile128x128x64.s4.wg1.cluster2.persistent-grouped.tmastore.pingpong", "wg2"),
    ("gemm.e4m3.8192x8192x8192.tile128x128x128.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.pingpong",
     "256 f32 accumulators"),
])
def test_pingpong_refuses_what_it_cannot_run(case_id, why):
    with pytest.raises(SpecError, match=why):
        parse(case_id)


def test_the_pingpong_kernel_compiles_without_spills_to_its_expectation(cache_dir):
    from harness.build.render import render
    from harness.build.sass import check

    case = parse(PINGPONG)
    build = compile_probe(render(case, GEMM))
    result = check(build, GEMM.sass_expectation(case))
    assert result.ok, result.note
    sass = "\n".join(disassemble(build.cubin_path)["probe_gemm"])
    # the turn between the consumer warpgroups: an arrival of 256 threads (0x100) on the other's barrier, which only
    # the ping-pong turn issues (the cooperative kernel has none), and a wait of 256 threads on its own
    assert re.search(r"BAR\.ARV \S+, 0x100", sass) and re.search(r"BAR\.SYNC(\.DEFER_BLOCKING)? \S+, 0x100", sass)
    cooperative = compile_probe(render(parse(PINGPONG.replace(".pingpong", "")), GEMM))
    assert "BAR.ARV" not in "\n".join(disassemble(cooperative.cubin_path)["probe_gemm"])
    assert np.isfinite(build.registers("probe_gemm"))


@pytest.mark.parametrize("case_id", [
    "gemm.e4m3.4096x4096x4096.tile128x128x128.s5.wg2.setmaxnreg.cluster1.persistent-row.tmastore.pipelined",
    PINGPONG,
])
def test_the_timed_build_reads_no_clock_around_its_waits_and_the_counting_build_does(cache_dir, case_id):
    """One module, two kernels of the same code: probe_gemm (timed) reads the clock at the kernel's ends and around
    each tile's mainloop and epilogue only; probe_gemm_counted at the kernel's ends and around every wait (two reads
    around each of the walk's waits on a full slot, and the producer's around its wait on an empty one), not around
    the tiles (the GEMM reads those counters from the timed build: WAITS_APART), and issues the same tensor-core
    work."""
    from harness.build.render import render
    from harness.families.pipeline import TIMED_CLOCK_READS, counted_kernel

    case = parse(case_id)
    sass = disassemble(compile_probe(render(case, GEMM)).cubin_path)
    reads = {k: sum(1 for ins in code if ins.startswith("CS2R") and "SR_CLOCK" in ins) for k, code in sass.items()}
    timed, counted = reads["probe_gemm"], reads[counted_kernel("probe_gemm")]
    assert timed == TIMED_CLOCK_READS and counted >= 2 + 4 and counted % 2 == 0, reads
    mma = lambda code: sorted(ins.split(" ", 1)[0] for ins in code if "GMMA." in ins.split(" ", 1)[0])
    assert mma(sass["probe_gemm"]) == mma(sass[counted_kernel("probe_gemm")])


# -- stream-K: the walk (harness/families/pipeline.py StreamK, the scheduler's arithmetic on the host) --------------

from hypothesis import given, settings, strategies as st  # noqa: E402

from harness.families.pipeline import StreamK  # noqa: E402


def _walk(split: StreamK) -> dict[tuple[int, int], tuple[int, int, int]]:
    """Every (tile, k-block) the grid walks -> (CTA, the run's slot, the tile's runs); a k-block walked twice fails."""
    walked = {}
    for cta in range(split.grid):
        for tile, kb0, kblocks, runs, slot in split.items(cta):
            assert kblocks >= 1 and 0 <= kb0 and kb0 + kblocks <= split.kblocks
            for kb in range(kb0, kb0 + kblocks):
                assert (tile, kb) not in walked, (tile, kb)
                walked[(tile, kb)] = (cta, slot, runs)
    return walked


@settings(max_examples=300, deadline=None)
@given(tiles=st.integers(1, 600), kblocks=st.integers(1, 130), grid=st.integers(1, 140), runs=st.sampled_from((2, 4, 8)))
def test_stream_k_walks_every_k_block_of_every_tile_once(tiles, kblocks, grid, runs):
    """Whatever the shape: each k-block of each tile is walked by exactly one CTA; a split tile's runs agree on their
    count, take distinct slots below the workspace's stride, and are at most about `runs` (a range is at least a
    1 / runs of a tile, so a tile touches at most runs + 1 of them); the whole tiles are whole waves."""
    split = StreamK(tiles, kblocks, grid, runs)
    walked = _walk(split)
    assert len(walked) == tiles * kblocks
    assert split.whole % grid == 0 and tiles - split.whole < grid
    for tile in range(split.whole, tiles):
        seen = {walked[(tile, kb)] for kb in range(kblocks)}
        counts = {r for _, _, r in seen}
        slots = {(cta, slot) for cta, slot, _ in seen}
        assert len(counts) == 1 and len(slots) == counts.pop() == len({s for _, s in slots})
        assert all(0 <= s < split.stride for _, s in slots) and len(slots) <= runs + 1


# ptx/pipeline.cuh's TileScheduler compiled for the host: the device keywords and blockIdx/gridDim it reads
HOST_PREAMBLE = r"""#include <algorithm>
#include <cstdio>
#include <cstdlib>
#define __host__
#define __device__
#define __forceinline__ inline
typedef unsigned int u32;
struct Dim { int x; };
static Dim blockIdx, gridDim;
using std::min;
constexpr int ORDER_ROW = 0, ORDER_GROUPED = 1, ORDER_HILBERT = 2;
"""

SCHEDULER_ON_THE_HOST = HOST_PREAMBLE + r"""
%s
template <int R>
void walk(int tiles_m, int tiles_n, int kblocks, int grid) {
  gridDim.x = grid;
  for (int cta = 0; cta < grid; ++cta) {
    blockIdx.x = cta;
    const TileScheduler<64, 64, 1, true, ORDER_ROW, 8, 1, R> sched(tiles_m * 64, tiles_n * 64, kblocks);
    for (int q = sched.begin(); q < sched.items; q = sched.next(q, kblocks)) {
      const Tile t = sched.tile(q, 0, kblocks);
      std::printf("%%d %%d %%d %%d %%d %%d %%d %%d\n", cta, t.row / 64, t.col / 64, t.kb0, t.kblocks ? t.kblocks : kblocks,
                  t.runs, t.split, t.unit);
    }
  }
}
int main(int argc, char** argv) {
  for (int i = 1; i + 4 < argc; i += 5) {
    const int m = std::atoi(argv[i]), n = std::atoi(argv[i + 1]), k = std::atoi(argv[i + 2]), g = std::atoi(argv[i + 3]);
    std::printf("case %%d\n", i / 5);
    switch (std::atoi(argv[i + 4])) { case 2: walk<2>(m, n, k, g); break; case 4: walk<4>(m, n, k, g); break;
                                      default: walk<8>(m, n, k, g); }
  }
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="no host C++ compiler")
def test_the_device_scheduler_walks_as_the_host_mirror(tmp_path):
    """ptx/pipeline.cuh's TileScheduler itself (its text between the tile walk's and the skeleton's headings, with
    blockIdx and gridDim as plain variables), compiled for the host and walked for every CTA, gives each CTA the work
    items StreamK (the host's copy that sizes the workspace) gives it: tile, first k-block, k-blocks, the tile's runs,
    the run's slot and the workspace unit (slot base), for shapes with and without whole waves, fewer tiles than
    CTAs, one k-block a tile and ranges cut by the runs' cap."""
    header = (Path(__file__).resolve().parents[1] / "ptx" / "pipeline.cuh").read_text()
    walk = header[header.index("// -- the tile walk"):header.index("// -- the skeleton")]
    source = tmp_path / "scheduler.cc"
    source.write_text(SCHEDULER_ON_THE_HOST % walk)
    binary = tmp_path / "scheduler"
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(binary), str(source)], check=True, timeout=120)
    shapes = [(32, 32, 64, 132, 4), (8, 16, 64, 132, 2), (1, 32, 128, 132, 8), (3, 6, 13, 5, 2), (2, 2, 1, 5, 4),
              (4, 33, 32, 132, 4), (11, 12, 7, 132, 8), (1, 1, 3, 132, 2), (7, 19, 128, 64, 4)]
    out = subprocess.run([str(binary), *(str(v) for shape in shapes for v in shape)], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split("case ")[1:]
    for (tiles_m, tiles_n, kblocks, grid, runs), text in zip(shapes, out):
        split = StreamK(tiles_m * tiles_n, kblocks, grid, runs)
        host = [(cta, tile // tiles_n, tile % tiles_n, kb0, n, r, slot, (tile - split.whole) * split.stride if r > 1 else 0)
                for cta in range(grid) for tile, kb0, n, r, slot in split.items(cta)]
        device = [tuple(int(v) for v in line.split()) for line in text.splitlines()[1:]]
        whole = [(c, i, j, k0, n) for c, i, j, k0, n, r, *_ in device if r == 1]
        assert [d if d[5] > 1 else d[:5] for d in device] == [h if h[5] > 1 else h[:5] for h in host], (tiles_m, tiles_n)
        assert len(whole) >= split.whole


def test_stream_k_levels_the_last_wave():
    """f16 4096^3 in 128x128 tiles on an H100 (1024 tiles of 64 k-blocks, 132 SMs): 7 whole waves and 100 tiles left;
    whole, the slowest SM walks 8 tiles (512 k-blocks), split it walks 7 and 48 or 49 k-blocks of the rest."""
    split = StreamK(1024, 64, 132, 4)
    walked = [sum(item[2] for item in split.items(cta)) for cta in range(132)]
    assert split.whole == 924 and split.parts == 132 and (min(walked), max(walked)) == (7 * 64 + 48, 7 * 64 + 49)
    assert StreamK(1024, 64, 132, 4).workspace_slots() == 100 * split.stride
    assert StreamK(924, 64, 132, 4).parts == 0  # tiles that fill whole waves: no split, no workspace
    assert StreamK(924, 64, 132, 4).workspace_slots() == 0


# -- the Hilbert tile order -------------------------------------------------------------------------------------

def _classic_hilbert(n: int, d: int) -> tuple[int, int]:
    """Cell d of Hilbert's curve on an n x n grid (n a power of two), from its definition: each level's quadrant is
    picked by two bits of d, the first and last quadrants' curves reflected so that they join their neighbours
    (the rotation form of the curve, as Hilbert's figure draws it). (x, y): start at (0, 0), end at (n - 1, 0)."""
    x = y = 0
    s, t = 1, d
    while s < n:
        rx = 1 & (t // 2)
        ry = 1 & (t ^ rx)
        if ry == 0:
            if rx == 1:
                x, y = s - 1 - x, s - 1 - y
            x, y = y, x
        x, y = x + s * rx, y + s * ry
        t //= 4
        s *= 2
    return x, y


# Hilbert's curve of order 2 on a 4 x 4 grid of (row, col), from the top-left corner to the top-right: the U through
# the quadrants top-left, bottom-left, bottom-right, top-right, each quadrant's own U turned to join them
HILBERT_4X4 = [(0, 0), (0, 1), (1, 1), (1, 0), (2, 0), (3, 0), (3, 1), (2, 1),
               (2, 2), (3, 2), (3, 3), (2, 3), (1, 3), (1, 2), (0, 2), (0, 3)]


def test_the_hilbert_order_of_a_power_of_two_square_is_hilberts_curve():
    from harness.families.pipeline import hilbert_cell

    assert [hilbert_cell(4, 4, q) for q in range(16)] == HILBERT_4X4
    for n in (2, 8, 16, 32):  # (row, col) = (y, x) of the curve's definition
        assert [hilbert_cell(n, n, q) for q in range(n * n)] == [_classic_hilbert(n, d)[::-1] for d in range(n * n)]
    # the worklog's 8 x 8 example: from the top-left corner to the top-right
    assert hilbert_cell(8, 8, 0) == (0, 0) and hilbert_cell(8, 8, 63) == (0, 7)


def test_the_hilbert_order_visits_every_tile_once_stepping_to_a_neighbour():
    """On any grid (rectangular, sides not powers of two): a permutation of the cells from the corner (0, 0), each
    step to a grid neighbour (Manhattan distance 1), except on a grid whose shorter side is even and above 2 and
    whose longer side odd: there exactly one step is diagonal (Chebyshev distance 1, Manhattan 2), the bound the
    generalized curve guarantees (every grid up to 20 x 20 and a few larger ones, the worklog's 32 x 16 among them)."""
    from harness.families.pipeline import tile_walk

    grids = [(r, c) for r in range(1, 21) for c in range(1, 21)] + [(32, 16), (16, 16), (17, 64), (64, 17), (9, 33)]
    for rows, cols in grids:
        pm, tn = tile_walk("hilbert", rows, cols)
        assert sorted(zip(pm.tolist(), tn.tolist())) == [(r, c) for r in range(rows) for c in range(cols)], (rows, cols)
        assert (pm[0], tn[0]) == (0, 0)
        dr, dc = np.abs(np.diff(pm)), np.abs(np.diff(tn))
        assert (np.maximum(dr, dc) == 1).all(), (rows, cols)
        diagonal = min(rows, cols) % 2 == 0 and min(rows, cols) > 2 and max(rows, cols) % 2 == 1
        assert int(((dr + dc) == 2).sum()) == int(diagonal), (rows, cols)


PLACE_ON_THE_HOST = HOST_PREAMBLE + r"""
%s
template <int ORDER>
void walk(int pairs_m, int tiles_n) {
  gridDim.x = 2;
  blockIdx.x = 0;
  const TileScheduler<64, 32, 2, true, ORDER, 8> sched(pairs_m * 128, tiles_n * 32);
  for (int q = 0; q < sched.items; ++q) {
    const Tile a = sched.place(q, 0), b = sched.place(q, 1);
    std::printf("%%d %%d %%d %%d\n", a.row, a.col, b.row, b.col);
  }
}
int main(int argc, char** argv) {
  for (int i = 1; i + 2 < argc; i += 3) {
    const int order = std::atoi(argv[i]), m = std::atoi(argv[i + 1]), n = std::atoi(argv[i + 2]);
    std::printf("case\n");
    if (order == 0) walk<ORDER_ROW>(m, n); else if (order == 1) walk<ORDER_GROUPED>(m, n); else walk<ORDER_HILBERT>(m, n);
  }
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="no host C++ compiler")
def test_the_device_scheduler_places_the_tiles_in_the_hosts_order(tmp_path):
    """ptx/pipeline.cuh's TileScheduler.place, compiled for the host (as the stream-K walk above is), puts the q-th work
    item of a cluster of 2 (64 x 32 tiles) where tile_walk says, in every order, on grids of pairs square, long and odd:
    the pair's first CTA on the pair's row, its second on the row below."""
    from harness.families.pipeline import ORDERS, tile_walk

    header = (Path(__file__).resolve().parents[1] / "ptx" / "pipeline.cuh").read_text()
    walk = header[header.index("// -- the tile walk"):header.index("// -- the skeleton")]
    source = tmp_path / "place.cc"
    source.write_text(PLACE_ON_THE_HOST % walk)
    binary = tmp_path / "place"
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(binary), str(source)], check=True, timeout=120)
    shapes = [(order, m, n) for order in range(len(ORDERS)) for m, n in ((16, 16), (4, 5), (9, 2), (3, 11))]
    out = subprocess.run([str(binary), *(str(v) for shape in shapes for v in shape)], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split("case\n")[1:]
    assert len(out) == len(shapes)
    for (order, pairs_m, tiles_n), text in zip(shapes, out):
        pm, tn = tile_walk(ORDERS[order], pairs_m, tiles_n)
        host = [(2 * r * 64, c * 32, (2 * r + 1) * 64, c * 32) for r, c in zip(pm.tolist(), tn.tolist())]
        assert [tuple(map(int, line.split())) for line in text.splitlines()] == host, (ORDERS[order], pairs_m, tiles_n)


def test_the_host_walks_the_tiles_as_the_kernel_places_them(cache_dir):
    """ptx/pipeline.cuh hilbert_cell (constexpr, evaluated by the compiler) gives the host's cells on square, long,
    odd and line grids: a static_assert per grid, so a cell moved on either side fails the build."""
    from harness.families.pipeline import hilbert_cell

    grids = [(4, 4), (8, 8), (16, 16), (32, 16), (16, 32), (4, 5), (5, 3), (6, 9), (9, 6), (1, 7), (7, 1), (3, 2)]

    def source(grids, poke=None):
        lines = [render_counters(), '#include "pipeline.cuh"',
                 "template <int N> __host__ __device__ constexpr int first_wrong(int rows, int cols, const int (&want)[N]) {",
                 "  for (int q = 0; q < N; ++q) {",
                 "    const GridCell c = hilbert_cell(rows, cols, q);",
                 "    if (c.row * cols + c.col != want[q]) return q;",
                 "  }",
                 "  return -1;",
                 "}"]
        for i, (rows, cols) in enumerate(grids):
            cells = [r * cols + c for r, c in (hilbert_cell(rows, cols, q) for q in range(rows * cols))]
            if poke == i:
                cells[1], cells[2] = cells[2], cells[1]
            lines.append(f"constexpr int want_{i}[] = {{{', '.join(map(str, cells))}}};")
            lines.append(f'static_assert(first_wrong({rows}, {cols}, want_{i}) == -1, "hilbert {rows}x{cols}");')
        return "\n".join(lines) + '\nextern "C" __global__ void k() {}\n'

    assert _compile(source(grids), "hilbert-cells").cubin_path.is_file()
    with pytest.raises(CompileError, match="hilbert 4x5"):  # and a wrong expectation does fail
        _compile(source(grids, poke=5), "hilbert-cells-wrong")


def test_a_grouped_and_a_row_walk_are_the_kernels_too():
    from harness.families.pipeline import GROUP, tile_walk

    pm, tn = tile_walk("row", 3, 4)
    assert list(zip(pm.tolist(), tn.tolist()))[:5] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]
    pm, tn = tile_walk("grouped", GROUP + 1, 2)  # GROUP rows column by column, then the last row alone
    assert list(zip(pm.tolist(), tn.tolist()))[:GROUP + 1] == [(r, 0) for r in range(GROUP)] + [(0, 1)]
    assert list(zip(pm.tolist(), tn.tolist()))[-2:] == [(GROUP, 0), (GROUP, 1)]
    with pytest.raises(ValueError, match="hilbert"):
        tile_walk("zorder", 2, 2)
