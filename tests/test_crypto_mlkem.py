"""ML-KEM (FIPS 203) on tang's integer tensor graphs, checked against two independent
implementations: kyber-py (pure Python, FIPS 203's internal functions) and pyca
cryptography (OpenSSL / AWS-LC), for 200 random seeds per parameter set; the arithmetic
mod q exhaustively against FIPS 203's formulas; the NTT against schoolbook products; the
printed Python and C against each other; and the input checks of FIPS 203 §7."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from fractions import Fraction

import pytest
from skips import import_or_skip

from tang.crypto import emit, mlkem, modq, poly
from tang.crypto.runner import Runner
from tang.expr import graph as g
from tang.tensor import frontend as tf

Q = modq.Q
SEEDS = 200
SETS = {p.name: p for p in mlkem.PARAMETER_SETS}


def _reference(name: str):
    kyber = import_or_skip("kyber_py.ml_kem", "kyber-py is the pure-Python ML-KEM oracle")
    return getattr(kyber, name.replace("-", "_"))


# ---- arithmetic mod q -----------------------------------------------------------------------


def test_reduction_and_compression_match_fips_203_on_every_input():
    for x in range(2 * Q):
        assert modq.csub(x) == x % Q
    rng = random.Random(1)
    for x in [*range(1 << 16), *(rng.randrange(1 << 26) for _ in range(50_000)), (1 << 26) - 1]:
        assert modq.reduce(x) == x % Q
    for d in (1, 4, 5, 10, 11):
        for x in range(Q):  # round(2**d / q · x) mod 2**d; q is odd, so no ties
            assert modq.compress(x, d) == round(Fraction(x << d, Q)) % (1 << d)
        for y in range(1 << d):  # round(q / 2**d · y), halves up
            assert modq.decompress(y, d) == int(Fraction(Q * y, 1 << d) + Fraction(1, 2))


def test_the_same_functions_trace_to_graphs_that_evaluate_alike():
    """Written once: on ints they compute, on nodes they build the kernel's graph."""
    x, y = g.var("x"), g.var("y")
    cases = {
        "reduce": (modq.reduce(x), lambda a, b: modq.reduce(a)),
        "mul": (modq.mul(x, y), modq.mul),
        "sub": (modq.sub(x, y), modq.sub),
        "compress": (modq.compress(x, 11), lambda a, b: modq.compress(a, 11)),
        "select": (
            modq.select(modq.nonzero(x), x, y),
            lambda a, b: modq.select(modq.nonzero(a), a, b),
        ),
    }
    rng = random.Random(2)
    for name, (node, fn) in cases.items():
        for _ in range(300):
            a, b = rng.randrange(Q), rng.randrange(Q)
            assert g.evaluate([node], {"x": a, "y": b}) == [fn(a, b)], name


# ---- polynomials --------------------------------------------------------------------------


def _schoolbook(a: list[int], b: list[int]) -> list[int]:
    """a·b in Z_q[X]/(X**256 + 1)."""
    out = [0] * 256
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            k = i + j
            out[k % 256] += -x * y if k >= 256 else x * y
    return [v % Q for v in out]


def test_ntt_inverts_and_its_products_are_negacyclic_products():
    zetas, gammas = poly.twiddles()
    a, b = tf.input("a", (256,)), tf.input("b", (256,))
    a_hat, b_hat = poly.ntt(a, zetas), poly.ntt(b.reshape(1, 256), zetas)
    product = poly.intt(poly.multiply_sum(a_hat.reshape(1, 1, 256), b_hat, gammas), zetas)
    graph = tf.graph(back=poly.intt(a_hat, zetas), product=product)
    run = Runner(graph)
    rng = random.Random(3)
    for _ in range(3):
        x, y = [rng.randrange(Q) for _ in range(256)], [rng.randrange(Q) for _ in range(256)]
        out = run({"a": x, "b": y, **poly.tables()})
        assert out["back"] == x
        assert out["product"] == _schoolbook(x, y)


@pytest.mark.toolchain
@pytest.mark.parametrize("name", sorted(SETS))
def test_the_graphs_print_alike_as_python_and_as_c(name):
    """Each graph lowered to Python and to C (i64 loop nests) gives the same whole numbers."""
    pytest.importorskip("ctypes")
    p = SETS[name]
    rng = random.Random(4)
    for role, graph in emit.graphs(p).items():
        inputs = {n: [rng.randrange(256) for _ in range(_size(graph, n))] for n in graph.inputs}
        inputs.update(poly.tables())
        if "a" in inputs:
            inputs["a"] = [rng.randrange(Q) for _ in inputs["a"]]
        assert Runner(graph, "python")(inputs) == Runner(graph, "c")(inputs), role


def _size(graph, name: str) -> int:
    size = 1
    for n in graph.inputs[name]:
        size *= n
    return size


# ---- the KEM against kyber-py and cryptography --------------------------------------------


def _against_kyber_py(p: mlkem.MLKEM, seeds: int, rng: random.Random) -> None:
    """Random seeds through ``p``: the same encapsulation and decapsulation keys, ciphertext
    and secret as kyber-py; decapsulation agrees; a tampered ciphertext gives kyber-py's
    implicit-rejection secret."""
    reference = _reference(p.name)
    for _ in range(seeds):
        d, z, m = (rng.randbytes(32) for _ in range(3))
        ek, dk = p.keygen_internal(d, z)
        assert (ek, dk) == reference._keygen_internal(d, z)
        key, c = p.encaps_internal(ek, m)
        assert (key, c) == reference._encaps_internal(ek, m)
        assert p.decaps(dk, c) == key
        spot = rng.randrange(len(c))
        tampered = c[:spot] + bytes([c[spot] ^ (1 << rng.randrange(8))]) + c[spot + 1 :]
        rejected = p.decaps(dk, tampered)
        assert rejected == reference.decaps(dk, tampered) != key


@pytest.mark.parametrize("name", sorted(SETS))
def test_the_python_graphs_match_kyber_py(name):
    _against_kyber_py(SETS[name], 4, random.Random(5))


@pytest.mark.toolchain
@pytest.mark.parametrize("name", sorted(SETS))
def test_the_compiled_kem_matches_kyber_py_on_200_seeds(name):
    _against_kyber_py(SETS[name].on("c"), SEEDS, random.Random(7))


@pytest.mark.toolchain
@pytest.mark.parametrize("name", ["ML-KEM-768", "ML-KEM-1024"])
def test_keys_and_ciphertexts_interoperate_with_cryptography(name):
    """cryptography (≥ 50) has ML-KEM-768 and -1024: the same encapsulation key from the
    same seed, and each side decapsulates the other's ciphertext."""
    module = import_or_skip(
        "cryptography.hazmat.primitives.asymmetric.mlkem", "pyca cryptography is the OpenSSL oracle"
    )
    private = getattr(module, f"MLKEM{name[-4:].lstrip('-')}PrivateKey")
    p = SETS[name].on("c")
    rng = random.Random(6)
    for _ in range(SEEDS):
        d, z = rng.randbytes(32), rng.randbytes(32)
        theirs = private.from_seed_bytes(d + z)
        ek, dk = p.keygen_internal(d, z)
        assert ek == theirs.public_key().public_bytes_raw()
        key, c = p.encaps(ek)
        assert theirs.decapsulate(c) == key
        their_key, their_c = theirs.public_key().encapsulate()
        assert p.decaps(dk, their_c) == their_key


def test_the_python_path_round_trips_with_fresh_randomness():
    p = mlkem.ML_KEM_512
    ek, dk = p.keygen()
    key, c = p.encaps(ek)
    assert len(ek) == p.ek_size == 800 and len(dk) == p.dk_size == 1632
    assert len(c) == p.ciphertext_size == 768 and p.decaps(dk, c) == key


# ---- FIPS 203 §7's input checks -------------------------------------------------------------


@pytest.mark.parametrize("language", ["python", pytest.param("c", marks=pytest.mark.toolchain)])
def test_malformed_keys_and_ciphertexts_are_refused_with_the_reason(language):
    p = mlkem.ML_KEM_768.on(language)
    ek, dk = p.keygen_internal(bytes(32), bytes(range(32)))
    _, c = p.encaps_internal(ek, bytes(32))
    with pytest.raises(ValueError, match="encapsulation key: expected 1184 bytes, got 1183"):
        p.encaps(ek[:-1])
    big = bytearray(ek)
    big[3:6] = bytes([0xFF, 0xFF, 0xFF])  # coefficients 2 and 3 of polynomial 0: 4095
    with pytest.raises(ValueError, match=r"coefficient 2 of polynomial 0 is 4095.*§7.2"):
        p.encaps(bytes(big))
    with pytest.raises(ValueError, match="ciphertext: expected 1088 bytes, got 1089"):
        p.decaps(dk, c + b"\0")
    with pytest.raises(ValueError, match="decapsulation key: expected 2400 bytes"):
        p.decaps(dk[:100], c)
    forged = bytearray(dk)
    forged[384 * 3] ^= 1  # the copy of ek inside dk no longer matches its hash
    with pytest.raises(ValueError, match=r"§7\.3 hash check"):
        p.decaps(bytes(forged), c)
    with pytest.raises(TypeError, match="seed d: expected bytes, got str"):
        p.keygen_internal("x" * 32, bytes(32))
    with pytest.raises(ValueError, match="seed m: expected 32 bytes, got 31"):
        p.encaps_internal(ek, bytes(31))
    with pytest.raises(ValueError, match="runs as 'python' or 'c', not 'gpu'"):
        p.on("gpu")


# ---- the C file -----------------------------------------------------------------------------


@pytest.mark.toolchain
def test_the_c_file_compiles_cleanly_under_strict_warnings(tmp_path):
    from tang.gpu.native_c import find_compiler

    compiler = find_compiler()
    if compiler is None:
        from skips import skip_missing

        skip_missing("toolchain", "cc", "the generated C needs a C compiler")
    out = tmp_path / "mlkem1024.c"
    done = subprocess.run(
        [sys.executable, "-m", "tang.crypto", "c", "ML-KEM-1024", "-o", str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "wrote" in done.stdout and "ML-KEM-1024" in done.stdout
    text = out.read_text()
    assert "int tang_mlkem1024_decaps(" in text and "#define K 4" in text
    flags = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-c", str(out), "-o", os.devnull]
    subprocess.run([compiler, *flags], check=True, capture_output=True)
