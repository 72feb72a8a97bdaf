"""ML-KEM (FIPS 203), the module-lattice key encapsulation, on tang's tensor IR.

All arithmetic on secrets (sampling from PRF bytes, the NTTs, the products, compression,
the codecs, and the implicit-rejection select) is three integer tensor graphs per
parameter set, printed by tang as Python or C (``tang.crypto.runner``). The host does
what FIPS 203 leaves to the hash functions (``hashlib``'s SHA3 and SHAKE) and SampleNTT's
rejection sampling, which reads only the public seed ρ.

    from tang.crypto import mlkem
    ek, dk = mlkem.ML_KEM_768.keygen()
    key, c = mlkem.ML_KEM_768.encaps(ek)
    assert mlkem.ML_KEM_768.decaps(dk, c) == key

``ML_KEM_768.on("c")`` is the same scheme compiled whole to C (``-O2``; hashing and
sampling by the hand-written driver of ``tang.crypto.c_driver``), called through ctypes.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping

from ..tensor.comprehension import TensorGraph
from . import poly
from .kpke import (
    PRF,
    G,
    H,
    J,
    Params,
    decrypt_graph,
    encrypt_graph,
    keygen_graph,
    matrix,
    reencrypt_graph,
    sample_ntt,
)
from .modq import N, Q
from .native import Native, native
from .runner import Runner

# ---- the scheme ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MLKEM(Params):
    """One parameter set of FIPS 203 (Table 2), run as ``language``: "python" (the graphs
    printed as Python, hashing by ``hashlib``: runs wherever tang does, Pyodide included)
    or "c" (the whole KEM compiled, ``tang.crypto.native``)."""

    language: str = "python"

    def on(self, language: str) -> MLKEM:
        """The same parameter set run as ``language`` ("python" or "c")."""
        if language not in ("python", "c"):
            raise ValueError(f"ML-KEM runs as 'python' or 'c', not {language!r}")
        return dataclasses.replace(self, language=language)

    def _native(self) -> Native:
        return native(self.base)

    def _run(self, graph: TensorGraph, inputs: Mapping[str, list[int]]) -> dict[str, list[int]]:
        return _runner(graph, "python")({**inputs, **poly.tables()})

    # ---- K-PKE (§5) ----
    def _pke_keygen(self, d: bytes) -> tuple[bytes, bytes]:
        rho, sigma = G(d + bytes([self.k]))
        prf = [PRF(self.eta1, sigma, n) for n in range(2 * self.k)]
        out = self._run(
            keygen_graph(self.base),
            {
                "a": matrix(rho, self.k),
                "prf_s": list(b"".join(prf[: self.k])),
                "prf_e": list(b"".join(prf[self.k :])),
            },
        )
        return bytes(out["t"]) + rho, bytes(out["s"])

    def _encrypt_inputs(self, ek: bytes, m: bytes, r: bytes) -> dict[str, list[int]]:
        k = self.k
        prf_y = b"".join(PRF(self.eta1, r, n) for n in range(k))
        prf_e1 = b"".join(PRF(self.eta2, r, n) for n in range(k, 2 * k))
        return {
            "t_bytes": list(ek[: 384 * k]),
            "a": matrix(ek[384 * k :], k),
            "m": list(m),
            "prf_y": list(prf_y),
            "prf_e1": list(prf_e1),
            "prf_e2": list(PRF(self.eta2, r, 2 * k)),
        }

    def _pke_encrypt(self, ek: bytes, m: bytes, r: bytes) -> bytes:
        out = self._run(encrypt_graph(self.base), self._encrypt_inputs(ek, m, r))
        return bytes(out["c1"]) + bytes(out["c2"])

    def _split(self, c: bytes) -> dict[str, list[int]]:
        cut = 32 * self.du * self.k
        return {"c1": list(c[:cut]), "c2": list(c[cut:])}

    # ---- ML-KEM internal (§6): deterministic ----
    def keygen_internal(self, d: bytes, z: bytes) -> tuple[bytes, bytes]:
        """Algorithm 16: (ek, dk) from the 32-byte seeds d and z."""
        _check_seed("d", d)
        _check_seed("z", z)
        if self.language == "c":
            return self._native().keygen_internal(d, z)
        ek, dk_pke = self._pke_keygen(d)
        return ek, dk_pke + ek + H(ek) + z

    def encaps_internal(self, ek: bytes, m: bytes) -> tuple[bytes, bytes]:
        """Algorithm 17: (K, c) for the 32-byte message m."""
        _check_seed("m", m)
        if self.language == "c":  # the compiled KEM checks the modulus itself
            _check_bytes(f"{self.name} encapsulation key", ek, self.ek_size)
            try:
                return self._native().encaps_internal(ek, m)
            except ValueError:
                self.check_ek(ek)  # raises, naming the coefficient
                raise
        self.check_ek(ek)
        key, r = G(m + H(ek))
        return key, self._pke_encrypt(ek, m, r)

    def decaps_internal(self, dk: bytes, c: bytes) -> bytes:
        """Algorithm 18: the shared key, or J(z ‖ c) when c does not re-encrypt (implicit
        rejection: the caller cannot tell which)."""
        if self.language == "c":  # the compiled KEM checks the key's hash itself
            _check_bytes(f"{self.name} ciphertext", c, self.ciphertext_size)
            _check_bytes(f"{self.name} decapsulation key", dk, self.dk_size)
            try:
                return self._native().decaps(dk, c)
            except ValueError:
                self.check_decaps(dk, c)  # raises, saying which check failed
                raise
        self.check_decaps(dk, c)
        k = self.k
        dk_pke, ek = dk[: 384 * k], dk[384 * k : 768 * k + 32]
        h, z = dk[768 * k + 32 : 768 * k + 64], dk[768 * k + 64 :]
        m = bytes(
            self._run(decrypt_graph(self.base), {"s_bytes": list(dk_pke), **self._split(c)})["m"]
        )
        key, r = G(m + h)
        inputs = {
            **self._encrypt_inputs(ek, m, r),
            **self._split(c),
            "candidate": list(key),
            "rejected": list(J(z + c)),
        }
        return bytes(self._run(reencrypt_graph(self.base), inputs)["key"])

    # ---- ML-KEM (§7): randomness from the operating system ----
    def keygen(self) -> tuple[bytes, bytes]:
        """Algorithm 19: a new (encapsulation key, decapsulation key)."""
        return self.keygen_internal(os.urandom(32), os.urandom(32))

    def encaps(self, ek: bytes) -> tuple[bytes, bytes]:
        """Algorithm 20: (shared key, ciphertext) for ``ek``."""
        return self.encaps_internal(ek, os.urandom(32))

    def decaps(self, dk: bytes, c: bytes) -> bytes:
        """Algorithm 21: the shared key of ciphertext ``c``."""
        return self.decaps_internal(dk, c)

    # ---- input checks (§7.2, §7.3) ----
    def check_ek(self, ek: bytes) -> None:
        """The encapsulation key's type and modulus checks: a ValueError saying which fails."""
        _check_bytes(f"{self.name} encapsulation key", ek, self.ek_size)
        for i in range(0, 384 * self.k, 3):
            b0, b1, b2 = ek[i], ek[i + 1], ek[i + 2]
            for n, value in (
                (2 * i // 3, b0 | (b1 & 15) << 8),
                (2 * i // 3 + 1, b1 >> 4 | b2 << 4),
            ):
                if value >= Q:
                    raise ValueError(
                        f"{self.name} encapsulation key: coefficient {n % N} of polynomial "
                        f"{n // N} is {value}, not below q = {Q} (FIPS 203 §7.2 modulus check)"
                    )

    def check_decaps(self, dk: bytes, c: bytes) -> None:
        """The ciphertext and decapsulation key type checks and the key's hash check."""
        _check_bytes(f"{self.name} ciphertext", c, self.ciphertext_size)
        _check_bytes(f"{self.name} decapsulation key", dk, self.dk_size)
        k = self.k
        if H(dk[384 * k : 768 * k + 32]) != dk[768 * k + 32 : 768 * k + 64]:
            raise ValueError(
                f"{self.name} decapsulation key: the hash of its encapsulation key does not "
                "match the one it holds (FIPS 203 §7.3 hash check)"
            )


@functools.cache
def _runner(graph: TensorGraph, language: str) -> Runner:
    return Runner(graph, language)


def _check_seed(name: str, value: bytes) -> None:
    _check_bytes(f"seed {name}", value, 32)


def _check_bytes(what: str, value: bytes, size: int) -> None:
    if not isinstance(value, (bytes, bytearray)):
        raise TypeError(f"{what}: expected bytes, got {type(value).__name__}")
    if len(value) != size:
        raise ValueError(f"{what}: expected {size} bytes, got {len(value)}")


ML_KEM_512 = MLKEM("ML-KEM-512", 2, 3, 2, 10, 4)
ML_KEM_768 = MLKEM("ML-KEM-768", 3, 2, 2, 10, 4)
ML_KEM_1024 = MLKEM("ML-KEM-1024", 4, 2, 2, 11, 5)
PARAMETER_SETS = (ML_KEM_512, ML_KEM_768, ML_KEM_1024)

__all__ = [
    "MLKEM",
    "ML_KEM_512",
    "ML_KEM_768",
    "ML_KEM_1024",
    "PARAMETER_SETS",
    "PRF",
    "G",
    "H",
    "J",
    "decrypt_graph",
    "encrypt_graph",
    "keygen_graph",
    "reencrypt_graph",
    "sample_ntt",
]
