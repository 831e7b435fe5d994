"""The compile stage: the cache, the SASS check's verdicts, compile errors (every case of every family
compiles in tests/test_conformance.py)."""

import dataclasses

import pytest

from harness.build.compile import compile_probe
from harness.build.render import ProbeSource, render_calibration
from harness.registry import probe_source
from harness.errors import CompileError
from harness.orchestration.runner import sass_check
from harness.registry import parse_case_id

CASE = parse_case_id("wgmma.mma_async.m64n64k16.f32.f16.f16.SS")


def test_the_cache_returns_the_same_build(cache_dir):
    first = compile_probe(probe_source(CASE))
    again = compile_probe(probe_source(CASE))
    assert not first.cached and again.cached and again.build_hash == first.build_hash


def test_a_serialized_chain_fails_the_sass_check(cache_dir):
    build = compile_probe(probe_source(CASE))
    assert sass_check(CASE, build).ok
    log = build.log + "\nptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized\n"
    assert not sass_check(CASE, dataclasses.replace(build, log=log)).ok


def test_a_probe_that_misses_its_instruction_fails_the_sass_check(cache_dir):
    """The wgmma probe checked against the expectation of another N: the count is wrong."""
    build = compile_probe(probe_source(CASE))
    other = parse_case_id("wgmma.mma_async.m64n72k16.f32.f16.f16.SS")
    check = sass_check(other, build)
    assert not check.ok and "expected 16 x HGMMA.64x72x16.F32, found 0" in check.note


def test_calibration_kernels_compile(cache_dir):
    build = compile_probe(render_calibration())
    assert build.registers("calibrate_ffma_768") is not None


def test_compile_errors_carry_the_log(cache_dir):
    with pytest.raises(CompileError) as info:
        compile_probe(ProbeSource("broken", "extern \"C\" __global__ void k() { undeclared(); }"))
    assert "undeclared" in info.value.log and "source:" in str(info.value)


def test_batched_disassembly_reads_as_nvdisasm_reads_each_file(cache_dir):
    """disassemble_many cuts the kernels out of their ELF files and disassembles them as one raw binary:
    every instruction must read as nvdisasm prints it from the file itself, but for branch targets
    (addresses instead of labels); a cubin with a CALL keeps its routine names (m8n8k4's emulation).
    A kernel of the same bytes in two cubins (the empty latency kernel of an f16 and a bf16 wgmma) is
    disassembled once, and reads in each as in its own file."""
    import re

    from harness.build import sass

    cases = [CASE, parse_case_id("wgmma.mma_async.sp.m64n256k64.s32.u8.s8.RS"),
             parse_case_id("mma.sync.m8n8k4.row.col.f32.f16.f16.f32"),
             parse_case_id("wgmma.mma_async.m64n64k16.f32.bf16.bf16.SS")]
    cubins = [compile_probe(probe_source(c)).cubin_path for c in cases]
    kernels = [sass._elf_kernels(c.read_bytes()) for c in cubins]
    shared = kernels[0]["probe_latency_empty"][0]
    assert kernels[3]["probe_latency_empty"][0] == shared and kernels[3]["probe_chain"][0] != kernels[0]["probe_chain"][0]
    raw, disassemble_raw = [], sass._disassemble_raw
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sass, "_disassemble_raw", lambda code: raw.append(code) or disassemble_raw(code))
        batched = sass.disassemble_many(cubins)
    assert sum(code.count(shared) for code in raw) == 1
    assert sum(map(len, raw)) == len(b"".join({code for k in kernels for code, _ in k.values()}))
    target = re.compile(r"`\(\.L_x_\d+\)|0x[0-9a-f]+$")
    for cubin in cubins:
        alone = sass._disassemble_elf(cubin)
        assert batched[cubin].keys() == alone.keys() and alone
        for kernel, instructions in alone.items():
            assert [target.sub("T", i) for i in batched[cubin][kernel]] == [target.sub("T", i) for i in instructions]
        assert sass.disassemble(cubin) == batched[cubin]  # from the cache next to the cubin
    assert any("__cuda_sm_8x_mma" in i for k in batched[cubins[2]].values() for i in k)


def test_a_relative_cache_folder_is_taken_from_the_working_directory(tmp_path, monkeypatch):
    """HOPPER_BENCH_CACHE=-56807807 (found by Hypothesis) once reached nvdisasm as an option: a relative
    folder is made absolute where it is read, so no tool sees a path that starts with '-'."""
    from harness.build.compile import cache_dir

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOPPER_BENCH_CACHE", "-56807807")
    folder = cache_dir()
    assert folder.is_absolute() and folder == tmp_path / "-56807807" / "cubin" and folder.is_dir()


def test_sources_that_differ_in_comments_only_are_compiled_once_into_the_same_cubin(tmp_path, monkeypatch):
    """compile_many compiles one source of each code_key (a GEMM at two problem sizes: only the comment naming
    its case differs) and gives the others its cubin: byte for byte the cubin their own compile makes, with a
    log that names their own file. Sources whose code differs are each compiled."""
    import re

    from harness.build import compile as compiling

    a, b = (probe_source(parse_case_id(f"gemm.f16.{n}x{n}x{n}.tile64x64x64.s1.wg1.cluster1.grid-row.regs"))
            for n in (4096, 8192))
    assert a.text != b.text and compiling.code_key(a) == compiling.code_key(b)
    assert compiling.code_key(probe_source(CASE)) != compiling.code_key(a)
    monkeypatch.setenv("HOPPER_BENCH_CACHE", str(tmp_path / "alone"))
    alone = compile_probe(b)
    monkeypatch.setenv("HOPPER_BENCH_CACHE", str(tmp_path / "together"))
    reused, same_code_build = [], compiling.same_code_build
    monkeypatch.setattr(compiling, "same_code_build", lambda build, source: reused.append(source.name)
                        or same_code_build(build, source))
    builds = compiling.compile_many([a, b, probe_source(CASE)])
    assert reused == [b.name]  # b was not compiled: it took a's cubin
    shared = builds[b.name]
    assert shared.cubin_path.read_bytes() == alone.cubin_path.read_bytes() != builds[CASE.case_id].cubin_path.read_bytes()
    assert shared.build_hash == alone.build_hash and shared.cubin_path.with_suffix(".cu").read_text() == b.text
    timing = re.compile(r"Compile time = [\d.]+ ms")
    assert f"{b.name}.cu(" in shared.log and f"{a.name}.cu(" not in shared.log
    assert timing.sub("", shared.log) == timing.sub("", alone.log)
