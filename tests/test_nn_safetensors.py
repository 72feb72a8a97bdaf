"""tang.nn.save/load: the safetensors format in pure Python. Files go both ways with the
official ``safetensors`` package (installed by the ``[dev]`` extras; those tests skip,
saying so, where it is absent); every kind of broken file is refused with its own reason;
a refused file never half-loads a model."""

from __future__ import annotations

import io
import json
import math
import struct

import pytest

import tang.nn as nn
from tang.nn.safetensors import SafetensorsError, parse_header


def official():
    """The official package's numpy API (it needs numpy too), or a skip saying what is absent."""
    return pytest.importorskip(
        "safetensors.numpy", reason="the official safetensors package (or numpy) is not installed"
    )


def f32(v: float) -> float:
    return struct.unpack("<f", struct.pack("<f", v))[0]


def sample_state() -> dict[str, nn.Tensor]:
    return {
        "0.weight": nn.tensor([[0.1, -2.5, 3.0], [1e-300, -0.0, 7.25]]),
        "0.bias": nn.tensor([math.pi, -math.e]),
        "scalar": nn.tensor(4.5),
        "empty": nn.zeros(0, 3),
    }


def test_round_trip_is_exact_through_bytes_paths_and_files(tmp_path) -> None:
    state = sample_state()
    blob = nn.save(None, state, metadata={"model": "test"})
    assert blob[8 : 8 + struct.unpack("<Q", blob[:8])[0]].decode().startswith("{")
    assert (8 + struct.unpack("<Q", blob[:8])[0]) % 8 == 0, "data starts 8-byte aligned"
    back, meta = nn.load(blob, with_metadata=True)
    assert meta == {"model": "test"}
    assert list(back) == list(state)
    for k in state:
        assert back[k].shape == state[k].shape
        assert [struct.pack("<d", v) for v in back[k].flat()] == [
            struct.pack("<d", v) for v in state[k].flat()
        ], k  # bit for bit, -0.0 and subnormals included
    path = tmp_path / "w.safetensors"
    assert nn.save(path, state) == nn.save(None, state)
    assert nn.load(str(path))["0.bias"].tolist() == state["0.bias"].tolist()
    buf = io.BytesIO()
    nn.save(buf, state)
    last = nn.available_backends()[-1]  # numpy where it is installed
    assert nn.load(io.BytesIO(buf.getvalue()), backend=last)["0.weight"].backend.name == last


def test_a_model_saves_and_loads_by_its_state_dict_keys() -> None:
    model = nn.Sequential(nn.Linear(3, 4, seed=1), nn.Tanh(), nn.Linear(4, 2, seed=2))
    blob = nn.save(None, model)
    assert sorted(nn.load(blob)) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    other = nn.Sequential(nn.Linear(3, 4, seed=5), nn.Tanh(), nn.Linear(4, 2, seed=6))
    other.load_state_dict(nn.load(blob))
    assert other[2].weight.tolist() == model[2].weight.tolist()
    single = nn.load(nn.save(None, model, dtype="F32"))
    assert single["0.weight"].flat() == [f32(v) for v in model[0].weight.flat()]


def test_official_package_reads_what_we_write(tmp_path) -> None:
    st = official()
    import numpy as np
    from safetensors import safe_open

    state = sample_state()
    arrays = st.load(nn.save(None, state, metadata={"epochs": "20"}))
    assert sorted(arrays) == sorted(state)
    for k, t in state.items():
        assert arrays[k].dtype == np.float64 and arrays[k].shape == t.shape
        assert arrays[k].tolist() == t.tolist()
    path = tmp_path / "ours.safetensors"
    nn.save(str(path), state, metadata={"epochs": "20"}, dtype="F32")
    with safe_open(str(path), framework="np") as f:
        assert f.metadata() == {"epochs": "20"}
        assert f.get_tensor("0.bias").dtype == np.float32
        assert f.get_tensor("0.bias").tolist() == [
            f32(math.pi),
            f32(-math.e),
        ]


def test_we_read_what_the_official_package_writes(tmp_path) -> None:
    st = official()
    import numpy as np

    rng = np.random.default_rng(0)
    arrays = {
        "w64": rng.standard_normal((5, 7)),
        "w32": rng.standard_normal((3, 2)).astype(np.float32),
        "w16": rng.standard_normal((4,)).astype(np.float16),
        "i64": np.arange(-3, 3, dtype=np.int64).reshape(2, 3),
        "i32": np.array([7, -8], dtype=np.int32),
        "u8": np.array([0, 255], dtype=np.uint8),
        "flag": np.array([True, False]),
        "empty": np.zeros((0, 4)),
    }
    blob = st.save(arrays, metadata={"who": "official"})
    ours, meta = nn.load(blob, with_metadata=True)
    assert meta == {"who": "official"}
    for k, a in arrays.items():
        assert ours[k].shape == a.shape, k
        assert ours[k].flat() == [float(v) for v in a.ravel().tolist()], k
    path = tmp_path / "official.safetensors"
    st.save_file(arrays, str(path))
    assert nn.load(path)["w64"].tolist() == arrays["w64"].tolist()
    model = nn.Sequential(nn.Linear(3, 2, seed=1))
    model.load_state_dict(nn.load(st.save({"0.weight": np.ones((2, 3)), "0.bias": np.zeros(2)})))
    assert model[0].weight.tolist() == [[1.0] * 3] * 2


def test_bf16_is_widened_exactly() -> None:
    values = [1.0, -2.5, 3.140625]  # exactly representable in bfloat16
    raw = b"".join(struct.pack("<f", v)[2:] for v in values)
    header = json.dumps({"x": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}).encode()
    assert nn.load(struct.pack("<Q", len(header)) + header + raw)["x"].tolist() == values


# -- broken files ------------------------------------------------------------------------------
def build(header: object, data: bytes, raw_header: bytes | None = None) -> bytes:
    text = raw_header if raw_header is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


GOOD_DATA = struct.pack("<6d", *range(6)) + struct.pack("<2d", 1.0, 2.0)


def good_header() -> dict:
    return {
        "a": {"dtype": "F64", "shape": [2, 3], "data_offsets": [0, 48]},
        "b": {"dtype": "F64", "shape": [2], "data_offsets": [48, 64]},
    }


def edited(**changes) -> bytes:
    header = good_header()
    for name, entry in changes.items():
        header[name] = entry
    return build(header, GOOD_DATA)


CORRUPT = {  # reason → (file, a piece of the message)
    "too short": (b"\x10\x00\x00", "too short for the 8-byte header length"),
    "huge header length": (struct.pack("<Q", 2**40) + b"{}", "over the 100000000-byte limit"),
    "header past the end": (struct.pack("<Q", 500) + b'{"a": 1}', "runs past the end of the file"),
    "header not UTF-8": (build(None, b"", raw_header=b'{"\xff\xfe": 1}'), "not UTF-8"),
    "header not an object": (build([1, 2], b""), "does not start with '{'"),
    "bad JSON": (build(None, b"", raw_header=b'{"a": {"dtype": "F64",,}}'), "not valid JSON"),
    "duplicate name": (
        build(
            None,
            GOOD_DATA[:48],
            raw_header=(
                b'{"a": {"dtype": "F64", "shape": [6], "data_offsets": [0, 48]},'
                b' "a": {"dtype": "F64", "shape": [6], "data_offsets": [0, 48]}}'
            ),
        ),
        "names 'a' twice",
    ),
    "NaN in header": (
        build(
            None, b"", raw_header=b'{"a": {"dtype": "F64", "shape": [NaN], "data_offsets": [0, 0]}}'
        ),
        "holds NaN, which is not JSON",
    ),
    "bad metadata": (
        build({**good_header(), "__metadata__": {"n": 3}}, GOOD_DATA),
        "__metadata__ must be an object of strings",
    ),
    "entry not an object": (edited(b=[0, 16]), "is a list, not an object"),
    "missing dtype": (edited(b={"shape": [2], "data_offsets": [48, 64]}), "has no 'dtype'"),
    "unknown dtype": (
        edited(b={"dtype": "F65", "shape": [2], "data_offsets": [48, 64]}),
        "unknown dtype 'F65'",
    ),
    "unsupported dtype": (
        edited(b={"dtype": "F8_E4M3", "shape": [16], "data_offsets": [48, 64]}),
        "tang.nn cannot read",
    ),
    "negative dim": (
        edited(b={"dtype": "F64", "shape": [-2], "data_offsets": [48, 64]}),
        "list of integers ≥ 0",
    ),
    "offsets not a pair": (
        edited(b={"dtype": "F64", "shape": [2], "data_offsets": [48]}),
        "must be [begin, end] integers",
    ),
    "offsets reversed": (
        edited(b={"dtype": "F64", "shape": [2], "data_offsets": [64, 48]}),
        "begin must be ≥ 0 and ≤ end",
    ),
    "offsets past the end": (
        edited(b={"dtype": "F64", "shape": [4], "data_offsets": [48, 80]}),
        "past the end of the data (64 bytes)",
    ),
    "size mismatch": (
        edited(b={"dtype": "F64", "shape": [3], "data_offsets": [48, 64]}),
        "is 16 bytes but dtype F64 shape [3] needs 24",
    ),
    "wrong dtype for its bytes": (
        edited(b={"dtype": "F32", "shape": [2], "data_offsets": [48, 64]}),
        "dtype F32 shape [2] needs 8",
    ),
    "overlapping ranges": (
        build(
            {
                "a": {"dtype": "F64", "shape": [6], "data_offsets": [0, 48]},
                "b": {"dtype": "F64", "shape": [2], "data_offsets": [40, 56]},
                "c": {"dtype": "F64", "shape": [1], "data_offsets": [56, 64]},
            },
            GOOD_DATA,
        ),
        "overlaps the tensor before it",
    ),
    "gap between ranges": (
        build(
            {
                "a": {"dtype": "F64", "shape": [5], "data_offsets": [0, 40]},
                "b": {"dtype": "F64", "shape": [2], "data_offsets": [48, 64]},
            },
            GOOD_DATA,
        ),
        "gap of 8 bytes before tensor 'b'",
    ),
    "trailing bytes": (
        build(good_header(), GOOD_DATA + b"\x00" * 8),
        "8 bytes after the last tensor belong to none",
    ),
    "empty name": (
        build({"": {"dtype": "F64", "shape": [8], "data_offsets": [0, 64]}}, GOOD_DATA),
        "empty name",
    ),
    "bad BOOL byte": (
        build({"f": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}, b"\x01\x02"),
        "BOOL but holds the byte 2",
    ),
    "truncated data": (
        build(good_header(), GOOD_DATA)[:-5],
        "'b' ends at byte 64, past the end of the data (59 bytes)",
    ),
}


@pytest.mark.parametrize("reason", sorted(CORRUPT))
def test_a_broken_file_is_refused_with_its_reason(reason: str) -> None:
    blob, expected = CORRUPT[reason]
    with pytest.raises(SafetensorsError) as info:
        nn.load(blob)
    message = str(info.value)
    assert message.startswith("safetensors: ")
    assert expected in message, message


def test_every_broken_file_has_its_own_message() -> None:
    messages = set()
    for blob, _ in CORRUPT.values():
        with pytest.raises(SafetensorsError) as info:
            nn.load(blob)
        messages.add(str(info.value))
    assert len(messages) == len(CORRUPT) >= 20
    # the good file the edits start from is fine; fields we do not know are ignored, as the
    # official reader does
    assert nn.load(build(good_header(), GOOD_DATA))["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    extra = edited(b={"dtype": "F64", "shape": [2], "data_offsets": [48, 64], "x": 1})
    assert nn.load(extra)["b"].tolist() == [1.0, 2.0]


def test_the_official_reader_refuses_the_same_structural_faults() -> None:
    official()
    from safetensors import SafetensorError
    from safetensors.numpy import load as official_load

    shared = sorted(
        set(CORRUPT) - {"duplicate name", "empty name", "bad BOOL byte", "unsupported dtype"}
    )
    for reason in shared:
        with pytest.raises(SafetensorError):
            official_load(CORRUPT[reason][0])


def test_every_truncation_of_a_real_file_is_refused_cleanly() -> None:
    blob = nn.save(None, sample_state(), metadata={"k": "v"})
    for cut in range(len(blob)):
        with pytest.raises(SafetensorsError):
            nn.load(blob[:cut])


def test_a_refused_file_leaves_the_model_untouched() -> None:
    model = nn.Sequential(nn.Linear(3, 2, seed=1))
    before = model[0].weight.tolist()
    wrong_shape = nn.save(None, {"0.weight": nn.zeros(3, 2), "0.bias": nn.zeros(2)})
    for blob in (CORRUPT["truncated data"][0], wrong_shape):
        with pytest.raises(ValueError):
            model.load_state_dict(nn.load(blob))
        assert model[0].weight.tolist() == before


def test_parse_header_reports_entries_in_file_order() -> None:
    entries, meta, start = parse_header(nn.save(None, {"z": nn.zeros(1), "a": nn.ones(2)}))
    assert [(e[0], e[3]) for e in entries] == [("z", (0, 8)), ("a", (8, 24))]
    assert meta == {} and start % 8 == 0


def test_save_refuses_what_the_format_cannot_hold() -> None:
    with pytest.raises(ValueError, match="dtype must be one of"):
        nn.save(None, {"a": nn.zeros(1)}, dtype="I8")
    with pytest.raises(TypeError, match="metadata must map str to str"):
        nn.save(None, {"a": nn.zeros(1)}, metadata={"n": 1})
    with pytest.raises(ValueError, match="not allowed"):
        nn.save(None, {"__metadata__": nn.zeros(1)})
