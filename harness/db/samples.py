"""How `sample_arrays.samples` is stored: the packed form on SQLite (exact, a third of the JSON text), a JSON array on
PostgreSQL, the SQL function the `samples` view needs, and the column type that converts between them (harness/db/
tables.py's SampleArray uses it)."""

from __future__ import annotations

import json
import zlib

import numpy as np
from sqlalchemy import LargeBinary, Text, TypeDecorator


# A sample array as stored (schema 10): one kind byte, then the body. The kind's low bits say what the
# body holds, bit 0x80 that it is raw-deflated (zlib, wbits=-15), which it is wherever that is shorter.
#   SAMPLES_FLOAT: the float64 values, little-endian, as 8 byte planes (every value's first byte, then
#                  every second byte, ...): values of one measurement share their sign, exponent and top
#                  mantissa bits, so the first planes deflate to little.
#   SAMPLES_INT8/16/32/64: every value is a whole number (|v| < 2**53, no -0.0): the first value and the
#                  differences of the next, as little-endian signed integers of that width.
# Both are exact: the float64 bits come back, or whole numbers that float64 holds exactly.
SAMPLES_FLOAT, SAMPLES_INT8, SAMPLES_INT16, SAMPLES_INT32, SAMPLES_INT64 = 0, 1, 2, 3, 4
SAMPLES_DEFLATED = 0x80
_INT_KINDS = {SAMPLES_INT8: "<i1", SAMPLES_INT16: "<i2", SAMPLES_INT32: "<i4", SAMPLES_INT64: "<i8"}


def _deflate(body: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(body) + packer.flush()


def pack_samples(values) -> bytes:
    """The samples as stored on SQLite (see SAMPLES_FLOAT above): exact, a third of their JSON text."""
    a = np.ascontiguousarray(np.asarray(values, dtype=float).ravel(), dtype="<f8")
    whole = a.size > 0 and bool(np.all(np.isfinite(a)) and np.all(a == np.rint(a)) and np.all(np.abs(a) < 2 ** 53)
                                and not np.any((a == 0) & np.signbit(a)))
    if whole:
        steps = np.diff(a.astype(np.int64), prepend=np.int64(0))
        low, high = int(steps.min()), int(steps.max())
        kind = next(k for k, dtype in _INT_KINDS.items()
                    if np.iinfo(dtype).min <= low and high <= np.iinfo(dtype).max)
        body = steps.astype(_INT_KINDS[kind]).tobytes()
    else:
        kind, body = SAMPLES_FLOAT, a.view(np.uint8).reshape(-1, 8).T.tobytes()
    packed = _deflate(body)
    return bytes([kind | SAMPLES_DEFLATED]) + packed if len(packed) < len(body) else bytes([kind]) + body


def unpack_samples(stored: bytes | str) -> np.ndarray:
    """The float64 samples of a stored array: packed (pack_samples) or a JSON array (schemas 5 to 9,
    and PostgreSQL)."""
    if isinstance(stored, str):
        return np.asarray(json.loads(stored), dtype=float)
    stored = bytes(stored)
    kind, body = stored[0], stored[1:]
    if kind & SAMPLES_DEFLATED:
        body = zlib.decompress(body, -15)
    kind &= ~SAMPLES_DEFLATED
    if kind in _INT_KINDS:
        return np.cumsum(np.frombuffer(body, dtype=_INT_KINDS[kind]).astype(np.int64)).astype(float)
    if kind != SAMPLES_FLOAT or len(body) % 8:
        raise ValueError(f"not a stored sample array (kind {kind}, {len(body)} bytes)")
    return np.frombuffer(body, dtype=np.uint8).reshape(8, -1).T.copy().view("<f8").ravel().astype(float)


def json_samples(values) -> str:
    """A JSON array of the samples, exact and short: whole numbers without ".0", others as the shortest
    round-trip repr (the stored form on PostgreSQL, and what the SQLite `samples` view expands)."""
    return json.dumps([int(v) if float(v).is_integer() and abs(v) < 2 ** 53 and not (v == 0 and np.signbit(v))
                       else float(v) for v in values], separators=(",", ":"))


def samples_json(stored: bytes | str | None) -> str | None:
    """SQL function `samples_json(sample_arrays.samples)`: the array as JSON text, for json_each. Every
    SQLite connection of the harness has it (harness/db/connections.py); the `samples` view needs it."""
    if stored is None or isinstance(stored, str):
        return stored
    return json_samples(unpack_samples(stored))


def register_functions(connection) -> None:
    """Give a sqlite3 connection the SQL functions the views need (`samples_json`, for the `samples`
    view). The harness's own connections have them; call this on one opened with sqlite3.connect."""
    connection.create_function("samples_json", 1, samples_json, deterministic=True)


class SampleBlob(TypeDecorator):
    """`sample_arrays.samples`: in Python a float64 array; stored packed (pack_samples) on SQLite, as a
    JSON array on PostgreSQL. Either form is read back, so a copy between the two is exact."""

    impl = LargeBinary
    cache_ok = True

    def load_dialect_impl(self, dialect):
        return dialect.type_descriptor(LargeBinary() if dialect.name == "sqlite" else Text())

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if isinstance(value, (bytes, memoryview)) and dialect.name == "sqlite":
            return bytes(value)  # already packed (a merge copies a SQLite source's arrays as stored)
        if isinstance(value, (bytes, memoryview, str)):
            value = unpack_samples(value)
        return pack_samples(value) if dialect.name == "sqlite" else json_samples(value)

    def process_result_value(self, value, dialect):
        return None if value is None else unpack_samples(value)
