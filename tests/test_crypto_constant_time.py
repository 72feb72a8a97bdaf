"""Constant time, two ways: the taint pass over the IR (the real graphs pass; a secret
table index, an early-exit compare and a remainder by a secret are each refused, naming
the comprehension, the line that defined it and the expression), and valgrind's memcheck
over the printed C in the ctgrind way (no branch or address depends on a secret; a leaky
variant printed and compiled the same way is reported)."""

from __future__ import annotations

from pathlib import Path

import pytest
from skips import skip_missing

from tang.crypto import ctgrind, emit, kpke, mlkem, poly
from tang.expr import graph as g
from tang.tensor import frontend as tf
from tang.tensor.ops import map_, take
from tang.tensor.passes import taint

HERE = Path(__file__).name


@pytest.mark.parametrize("p", mlkem.PARAMETER_SETS, ids=lambda p: p.name)
def test_the_real_graphs_pass_and_their_outputs_are_traced_to_the_secrets(p):
    for role, graph in emit.graphs(p).items():
        secret = emit.ROLES[role][2]
        assert taint.leaks(graph, secret) == [], role
        found = taint.check(graph, secret)
        for output in graph.outputs:
            assert found[output], (role, output)  # every output derives from a secret
        assert not found[poly.ZETAS] and not found[poly.GAMMAS]
    keygen = taint.check(mlkem.keygen_graph(p), ["prf_s", "prf_e"])
    assert keygen["s"] == {"prf_s"} and keygen["t"] == {"prf_s", "prf_e"}


def _line(marker: str) -> int:
    """The line of this file holding ``marker`` (what the pass must name)."""
    lines = Path(__file__).read_text().splitlines()
    return next(k for k, text in enumerate(lines, 1) if marker in text and "_line(" not in text)


def test_a_secret_table_index_is_refused():
    key, table = tf.input("key", (256,)), tf.input("table", (3329,))
    leaky = tf.graph(take(table, key))  # leak: secret index
    with pytest.raises(taint.TaintError) as caught:
        taint.check(leaky, ["key"])
    (leak,) = caught.value.leaks
    assert leak.kind == "index" and leak.sources == ("key",)
    assert leak.origin == f"tests/{HERE}:{_line('# leak: secret index')}"
    assert "table[r0]" in leak.expression and "key[i0]" in leak.expression
    assert "a memory position taken from secret data (key)" in str(caught.value)
    assert taint.leaks(leaky, []) == []  # a public index is fine


def test_an_early_exit_compare_in_the_re_encryption_check_is_refused():
    """The FO check written with a branch on the comparison (as `if c != c2` would be)
    instead of a mask over every byte."""
    c, again = tf.input("c", (768,)), tf.input("again", (768,))
    key, rejected = tf.input("key", (32,)), tf.input("rejected", (32,))
    differs = poly.differ(c, again)

    def early_exit(k: g.Node, r: g.Node, d: g.Node) -> g.Node:
        return g.select(g.eq(d, 0.0), k, r)

    pick = map_(early_exit, key, rejected, differs)  # leak: branch
    leaky = tf.graph(out=pick)
    (leak,) = taint.leaks(leaky, ["again", "key", "rejected"])
    assert leak.kind == "branch" and leak.sources == ("again",)
    assert leak.origin.endswith(f"{HERE}:{_line('# leak: branch')}")
    assert leak.expression.startswith("where(")
    fixed = tf.graph(out=poly.choose(differs, rejected, key))
    assert taint.leaks(fixed, ["again", "key", "rejected"]) == []


def test_a_remainder_by_a_secret_and_a_max_over_secrets_are_refused():
    a, s = tf.input("a", (64,)), tf.input("s", (64,))
    leaky = tf.graph(map_(lambda x, y: x % (y + 1), a, s))  # leak: remainder
    (leak,) = taint.leaks(leaky, ["s"])
    assert leak.kind == "variable-time" and "mod(" in leak.expression
    assert leak.origin.endswith(f"{HERE}:{_line('# leak: remainder')}")
    assert taint.leaks(leaky, ["a"])  # the dividend alone is secret: still a divide's time
    biggest = tf.graph(s.max())
    (leak,) = taint.leaks(biggest, ["s"])
    assert leak.kind == "branch" and "max reduction" in leak.expression
    assert taint.leaks(tf.graph(s.sum()), ["s"]) == []


def test_the_pass_is_generic_and_refuses_unknown_inputs():
    text = Path(taint.__file__).read_text().lower()
    for word in ("ntt", "mlkem", "ml-kem", "kyber", "keygen", "encaps", "decaps", "cbd", "crypto"):
        assert word not in text, word
    with pytest.raises(ValueError, match="'nope' is not an input of the graph"):
        taint.check(mlkem.decrypt_graph(mlkem.ML_KEM_512), ["nope"])
    leaky = _leaky_decrypt(mlkem.ML_KEM_512)
    with pytest.raises(taint.TaintError, match="memory position taken from secret data"):
        emit.c_source(mlkem.ML_KEM_512, replace={"decrypt": leaky})


def _leaky_decrypt(p: mlkem.MLKEM) -> tf.TensorGraph:
    """Decrypt with the message bits looked up in a table indexed by the secret w (the
    classic cache-timing leak), inputs and outputs as the real graph's."""
    w = kpke.decrypt_noisy(p)
    _, gammas = poly.twiddles()
    bits = map_(lambda x: x & 1, take(gammas, map_(lambda x: x >> 5, w)))
    return tf.graph(m=poly.byte_encode(bits, 1).reshape(32))


def _valgrind() -> None:
    why = ctgrind.available()
    if why:
        skip_missing("toolchain", "valgrind", why)


@pytest.mark.toolchain
@pytest.mark.parametrize("p", mlkem.PARAMETER_SETS, ids=lambda p: p.name)
def test_memcheck_sees_no_secret_dependent_branch_or_address(p):
    """KeyGen, Encaps, Decaps and a rejected Decaps with the seeds marked undefined."""
    _valgrind()
    report = ctgrind.check(p)
    assert "keys agree: 1, rejected key differs: 1" in report.stdout, report.log
    assert (report.branches, report.addresses, report.errors) == (0, 0, 0), report.log
    assert report.constant_time


@pytest.mark.toolchain
def test_memcheck_reports_a_leaky_variant_compiled_the_same_way():
    _valgrind()
    p = mlkem.ML_KEM_512
    report = ctgrind.check(p, replace={"decrypt": _leaky_decrypt(p)}, taint_check=False)
    assert report.branches + report.addresses > 0 and report.errors > 0, report.log
    assert not report.constant_time
    assert "_decrypt_" in report.log  # memcheck names the printed step
