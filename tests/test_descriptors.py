import numpy as np
import pytest

from harness.families.wgmma.descriptors import KMajorLayout, Layout, SmemDescriptor
from harness.errors import SpecError


def test_paper_layout_encodes_to_known_bits():
    # LBO = 128 B and SBO = 256 B (the paper's code): fields hold value >> 4 at bits 16 and 32.
    descriptor = SmemDescriptor(start_address=0, leading_byte_offset=128, stride_byte_offset=256)
    assert descriptor.encode() == (8 << 16) | (16 << 32) == 0x0000001000080000


def test_every_field_round_trips():
    for swizzle in ("none", "128B", "64B", "32B"):
        descriptor = SmemDescriptor(0x3FFF0, 4096, 65520, base_offset=5, swizzle=swizzle)
        assert SmemDescriptor.decode(descriptor.encode()) == descriptor
    assert SmemDescriptor.decode(1 << 62).swizzle == "128B"


def test_describe_names_each_field():
    text = SmemDescriptor(2048, 128, 256).describe()
    assert text.startswith("0x0000001000080080") and "LBO=128 B" in text and "SBO=256 B" in text


@pytest.mark.parametrize("kwargs", [dict(start_address=8), dict(leading_byte_offset=1 << 18),
                                    dict(stride_byte_offset=-16), dict(base_offset=8), dict(swizzle="16B")])
def test_invalid_fields_are_rejected(kwargs):
    fields = dict(start_address=0, leading_byte_offset=128, stride_byte_offset=256) | kwargs
    with pytest.raises(SpecError):
        SmemDescriptor(**fields)


def test_k_major_layout_places_core_matrices():
    layout = KMajorLayout(rows=64, k=16, element_bits=16)
    offsets = layout.byte_offsets()  # per byte of a row's 32 bytes of K
    assert (layout.leading_byte_offset, layout.stride_byte_offset, layout.size_bytes) == (128, 256, 2048)
    assert offsets[0, 0] == 0 and offsets[0, 2] == 2 and offsets[1, 0] == 16  # one core-matrix row = 16 B
    assert offsets[0, 16] == 128  # next core matrix in K (byte 16 = element 8): LBO
    assert offsets[8, 0] == 256  # next core matrix in rows: SBO
    assert sorted(offsets.ravel()) == list(range(2048))  # every byte once, no gaps


def test_image_scatters_bits_little_endian():
    layout = KMajorLayout(rows=8, k=16, element_bits=16)
    bits = np.arange(8 * 16, dtype=np.uint16).reshape(8, 16) * 257
    image = layout.image(bits)
    offsets = layout.byte_offsets()[:, ::2]
    assert np.array_equal(image[offsets] | (image[offsets + 1].astype(np.uint16) << 8), bits)


@pytest.mark.parametrize("bits,k", [(32, 8), (8, 32), (1, 256)])
def test_every_type_fills_32_bytes_of_k_per_row(bits, k):
    """tf32 K = 8, 8-bit K = 32, b1 K = 256: the same two core matrices along K; sub-byte elements
    fill a byte from its lowest bit."""
    layout = KMajorLayout(rows=8, k=k, element_bits=bits)
    assert (layout.k_bytes, layout.stride_byte_offset, layout.size_bytes) == (32, 256, 256)
    codes = np.zeros((8, k), dtype=np.uint64)
    codes[1, 1] = 1 if bits == 1 else 0xA5
    image = layout.image(codes)
    if bits == 1:
        assert image[16] == 0b10  # row 1 starts at byte 16; element 1 is bit 1 of its first byte
    elif bits == 8:
        assert image[17] == 0xA5
    else:
        assert image[16 + 4] == 0xA5 and image[16 + 5] == 0  # element 1 = bytes 4..7, little-endian


def test_ptx_isa_worked_example_k_major_tf32():
    """PTX ISA, canonical layouts: K-major, no swizzle, tf32 ((8,2),(4,4)):((4,32),(1,64)) in elements,
    i.e. LBO = 64 x 4 B (encoded 16) and SBO = 32 x 4 B (encoded 8)."""
    layout = Layout(rows=16, k=16, element_bits=32, packing="mn-first")
    descriptor = layout.descriptor(0)
    assert (descriptor.encode() >> 16) & 0x3FFF == 16 and (descriptor.encode() >> 32) & 0x3FFF == 8
    r, k = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    expected = 4 * ((r % 8) * 4 + (r // 8) * 32 + (k % 4) + (k // 4) * 64)
    assert np.array_equal(layout.byte_offsets()[:, ::4], expected)


def test_ptx_isa_worked_example_mn_major_64b_bf16():
    """PTX ISA: MN-major, 64-byte swizzle, bf16 ((8,4,2),(8,2)):((1,8,256),(32,512)) in elements: LBO =
    256 x 2 B (encoded 32), SBO = 512 x 2 B (encoded 64); then Swizzle<2,4,3> on the byte address."""
    layout = Layout(rows=64, k=16, element_bits=16, major="MN", swizzle="64B", packing="mn-first")
    fields = SmemDescriptor.decode(layout.descriptor(0).encode())
    assert (fields.leading_byte_offset >> 4, fields.stride_byte_offset >> 4, fields.swizzle) == (32, 64, "64B")
    mn, k = np.meshgrid(np.arange(64), np.arange(16), indexing="ij")
    canonical = 2 * ((mn % 8) + (mn // 8 % 4) * 8 + (mn // 32) * 256 + (k % 8) * 32 + (k // 8) * 512)
    swizzled = canonical ^ (((canonical >> 7) & 3) << 4)
    assert np.array_equal(layout.byte_offsets()[:, ::2], swizzled)
    assert sorted(layout.byte_offsets().ravel()) == list(range(layout.size_bytes))


def test_128b_swizzle_xors_the_16_byte_chunk_with_the_row():
    """The 128-byte swizzle (CUDA programming guide, TMA swizzle patterns): in each 1024-byte repeat,
    16-byte chunk c of row r lands at chunk c XOR (r mod 8)."""
    layout = Layout(rows=16, k=64, element_bits=16, swizzle="128B")
    offsets = layout.byte_offsets()
    for r in range(16):
        for c in range(2):  # one instruction's 32 bytes of K
            assert offsets[r, 16 * c] == (r // 8) * 1024 + (r % 8) * 128 + 16 * (c ^ (r % 8))


@pytest.mark.parametrize("major,swizzle", [("K", s) for s in ("32B", "64B", "128B")] +
                         [("MN", s) for s in ("none", "32B", "64B", "128B")])
def test_every_layout_places_each_byte_once_inside_the_tile(major, swizzle):
    k = 16 if major == "MN" else {"32B": 16, "64B": 32, "128B": 64}[swizzle]
    layout = Layout(rows=64, k=k, element_bits=16, major=major, swizzle=swizzle)
    offsets = layout.byte_offsets().ravel()
    assert len(set(offsets.tolist())) == offsets.size and offsets.max() < layout.size_bytes
    assert layout.size_bytes % (8 * max(16, layout.span)) == 0


def test_k_major_swizzled_rows_cannot_hold_more_k_than_the_span():
    with pytest.raises(SpecError, match="32 B of K"):
        Layout(rows=8, k=32, element_bits=16, swizzle="32B")
