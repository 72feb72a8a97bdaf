"""K-PKE, ML-KEM's inner public-key encryption (FIPS 203 §5), as integer tensor graphs:
the parameter sets, the hash functions of §4.1 (``hashlib``), SampleNTT's rejection
sampling from the public seed ρ, and the four graphs that do all arithmetic on secrets
(KeyGen, Encrypt, Decrypt, and Decaps' re-encryption check). ``tang.crypto.mlkem`` runs
them; ``tang.crypto.emit`` prints them as C.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib

from ..tensor import frontend as tf
from ..tensor.comprehension import TensorGraph
from ..tensor.frontend import Tensor
from ..tensor.ops import map_
from . import poly
from .modq import N, Q


@dataclasses.dataclass(frozen=True)
class Params:
    """One parameter set of FIPS 203 (Table 2): its name, the module rank k, the noise
    widths η1 and η2, and the ciphertext's compression widths du and dv."""

    name: str
    k: int
    eta1: int
    eta2: int
    du: int
    dv: int

    # ---- sizes in bytes (Table 3) ----
    @property
    def ek_size(self) -> int:
        return 384 * self.k + 32

    @property
    def dk_size(self) -> int:
        return 768 * self.k + 96

    @property
    def ciphertext_size(self) -> int:
        return 32 * (self.du * self.k + self.dv)

    @property
    def base(self) -> Params:
        """The parameter set alone (what its graphs depend on)."""
        return Params(self.name, self.k, self.eta1, self.eta2, self.du, self.dv)


# ---- the hash functions of FIPS 203 §4.1 -------------------------------------------------


def H(s: bytes) -> bytes:
    return hashlib.sha3_256(s).digest()


def J(s: bytes) -> bytes:
    return hashlib.shake_256(s).digest(32)


def G(s: bytes) -> tuple[bytes, bytes]:
    h = hashlib.sha3_512(s).digest()
    return h[:32], h[32:]


def PRF(eta: int, s: bytes, b: int) -> bytes:
    return hashlib.shake_256(s + bytes([b])).digest(64 * eta)


def sample_ntt(seed: bytes) -> list[int]:
    """SampleNTT (Algorithm 7): 256 coefficients below q from SHAKE128(seed), 12 bits at a
    time, rejecting those ≥ q. Its loop runs on the public seed ρ only."""
    length = 3 * 280
    while True:
        stream = hashlib.shake_128(seed).digest(length)
        out: list[int] = []
        for k in range(0, length - 2, 3):
            c0, c1, c2 = stream[k], stream[k + 1], stream[k + 2]
            for d in (c0 + 256 * (c1 & 15), (c1 >> 4) + 16 * c2):
                if d < Q and len(out) < N:
                    out.append(d)
            if len(out) == N:
                return out
        length *= 2  # rare: a longer prefix of the same stream


def matrix(rho: bytes, k: int) -> list[int]:
    """Â (k × k × 256, row-major) with Â[i][j] = SampleNTT(ρ ‖ j ‖ i)."""
    out: list[int] = []
    for i in range(k):
        for j in range(k):
            out += sample_ntt(rho + bytes([j, i]))
    return out


# ---- the graphs ---------------------------------------------------------------------------


def _encrypt(
    p: Params,
    t_bytes: Tensor,
    a: Tensor,
    m: Tensor,
    prf_y: Tensor,
    prf_e1: Tensor,
    prf_e2: Tensor,
    zetas: Tensor,
    gammas: Tensor,
) -> tuple[Tensor, Tensor]:
    """K-PKE.Encrypt (Algorithm 14) as tensors: (c1, c2)."""
    t_hat = poly.byte_decode(t_bytes, 12)
    y_hat = poly.ntt(poly.cbd(prf_y, p.eta1), zetas)
    e1 = poly.cbd(prf_e1, p.eta2)
    e2 = poly.cbd(prf_e2, p.eta2)
    u = poly.add(poly.intt(poly.multiply_sum(a.permute(1, 0, 2), y_hat, gammas), zetas), e1)
    mu = poly.decompress(poly.byte_decode(m.reshape(1, 32), 1), 1)
    v = poly.intt(poly.multiply_sum(t_hat.expand_dims(0), y_hat, gammas), zetas)
    v = poly.add(poly.add(v, e2), mu)
    c1 = poly.byte_encode(poly.compress(u, p.du), p.du)
    c2 = poly.byte_encode(poly.compress(v, p.dv), p.dv)
    return c1, c2


def _inputs(*names_shapes: tuple[str, tuple[int, ...]]) -> list[Tensor]:
    return [tf.input(n, s) for n, s in names_shapes]


@functools.cache
def keygen_graph(p: Params) -> TensorGraph:
    """K-PKE.KeyGen's arithmetic (Algorithm 13): Â and the PRF bytes in, t̂ and ŝ encoded."""
    k, eta = p.k, p.eta1
    a, prf_s, prf_e = _inputs(("a", (k, k, N)), ("prf_s", (k, 64 * eta)), ("prf_e", (k, 64 * eta)))
    zetas, gammas = poly.twiddles()
    s_hat = poly.ntt(poly.cbd(prf_s, eta), zetas)
    e_hat = poly.ntt(poly.cbd(prf_e, eta), zetas)
    t_hat = poly.add(poly.multiply_sum(a, s_hat, gammas), e_hat)
    return tf.graph(t=poly.byte_encode(t_hat, 12), s=poly.byte_encode(s_hat, 12))


def _encrypt_inputs(p: Params) -> list[Tensor]:
    k = p.k
    return _inputs(
        ("t_bytes", (k, 384)),
        ("a", (k, k, N)),
        ("m", (32,)),
        ("prf_y", (k, 64 * p.eta1)),
        ("prf_e1", (k, 64 * p.eta2)),
        ("prf_e2", (1, 64 * p.eta2)),
    )


@functools.cache
def encrypt_graph(p: Params) -> TensorGraph:
    """K-PKE.Encrypt's arithmetic (Algorithm 14): the ciphertext's two parts."""
    c1, c2 = _encrypt(p, *_encrypt_inputs(p), *poly.twiddles())
    return tf.graph(c1=c1, c2=c2)


def decrypt_noisy(p: Params) -> Tensor:
    """K-PKE.Decrypt (Algorithm 15) up to w = v − NTT⁻¹(ŝᵀ ∘ NTT(u)), the message under
    noise, from the inputs ``s_bytes`` (ŝ encoded), ``c1`` and ``c2``."""
    k = p.k
    s_bytes, c1, c2 = _inputs(("s_bytes", (k, 384)), ("c1", (k, 32 * p.du)), ("c2", (1, 32 * p.dv)))
    zetas, gammas = poly.twiddles()
    u = poly.decompress(poly.byte_decode(c1, p.du), p.du)
    v = poly.decompress(poly.byte_decode(c2, p.dv), p.dv)
    s_hat = poly.byte_decode(s_bytes, 12)
    product = poly.multiply_sum(s_hat.expand_dims(0), poly.ntt(u, zetas), gammas)
    return poly.sub(v, poly.intt(product, zetas))


@functools.cache
def decrypt_graph(p: Params) -> TensorGraph:
    """K-PKE.Decrypt (Algorithm 15): ŝ encoded and the ciphertext in, the message out."""
    w = decrypt_noisy(p)
    return tf.graph(m=poly.byte_encode(poly.compress(w, 1), 1).reshape(32))


@functools.cache
def reencrypt_graph(p: Params) -> TensorGraph:
    """ML-KEM.Decaps' check (Algorithm 18, lines 8–11): encrypt m′ again and keep K′ if the
    ciphertext matches, else K̄ = J(z ‖ c), every byte compared (implicit rejection)."""
    k = p.k
    inputs = _encrypt_inputs(p)
    c1_in, c2_in, candidate, rejected = _inputs(
        ("c1", (k, 32 * p.du)), ("c2", (1, 32 * p.dv)), ("candidate", (32,)), ("rejected", (32,))
    )
    c1, c2 = _encrypt(p, *inputs, *poly.twiddles())
    flag = map_(lambda x, y: x | y, poly.differ(c1, c1_in), poly.differ(c2, c2_in))
    return tf.graph(key=poly.choose(flag, rejected, candidate))


__all__ = [
    "PRF",
    "G",
    "H",
    "J",
    "Params",
    "decrypt_graph",
    "decrypt_noisy",
    "encrypt_graph",
    "keygen_graph",
    "matrix",
    "reencrypt_graph",
    "sample_ntt",
]
