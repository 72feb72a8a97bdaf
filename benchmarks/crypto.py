"""ML-KEM KeyGen / Encaps / Decaps per second: tang's printed C (the whole KEM, ``-O2``,
through ctypes), tang's pure-Python path (the graphs printed as Python, hashlib for the
hashes), kyber-py (pure Python) and pyca cryptography (OpenSSL / AWS-LC), in one run.

    python benchmarks/crypto.py [--params ML-KEM-768] [--repeat 7]

cryptography's Encaps parses the encapsulation key from bytes in each call, as tang's does
(its key object expands Â once, at parsing); its Decaps runs on a loaded private key (one
loads only from the 64-byte seed, which is a whole KeyGen), so it skips SampleNTT, which
tang's Decaps, taking the 2,400-byte key, cannot.

Each figure is the fastest of ``repeat`` rounds, the contenders taking turns (a round is a
batch of calls sized to take about 20 ms). Every contender is first checked to give the
same keys, ciphertext and secret as tang from the same seeds (cryptography's encaps draws
its own randomness: its ciphertext is checked to decapsulate under tang instead). Targets
(issue 26): tang's C within 3× of cryptography's time, and at least 50× kyber-py's speed.
The peers are optional: a missing one is named and left out.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import fastest_interleaved
from harness import once as harness_once

from tang.crypto import mlkem

OPS = ("keygen", "encaps", "decaps")


def contenders(p: mlkem.MLKEM) -> tuple[dict[str, dict[str, Callable[[], object]]], list[str]]:
    """Name → {op → one call}, every one checked against tang first; and what is missing."""
    d, z, m = os.urandom(32), os.urandom(32), os.urandom(32)
    c_kem, py_kem = p.on("c"), p.on("python")
    ek, dk = c_kem.keygen_internal(d, z)
    key, c = c_kem.encaps_internal(ek, m)
    assert py_kem.keygen_internal(d, z) == (ek, dk) and py_kem.encaps_internal(ek, m) == (key, c)
    assert c_kem.decaps(dk, c) == py_kem.decaps(dk, c) == key
    out = {
        "tang C": {
            "keygen": lambda: c_kem.keygen_internal(d, z),
            "encaps": lambda: c_kem.encaps_internal(ek, m),
            "decaps": lambda: c_kem.decaps(dk, c),
        },
        "tang Python": {
            "keygen": lambda: py_kem.keygen_internal(d, z),
            "encaps": lambda: py_kem.encaps_internal(ek, m),
            "decaps": lambda: py_kem.decaps(dk, c),
        },
    }
    missing = []
    try:
        from kyber_py import ml_kem

        kyber = getattr(ml_kem, p.name.replace("-", "_"))
        assert kyber._keygen_internal(d, z) == (ek, dk)
        assert kyber._encaps_internal(ek, m) == (key, c) and kyber.decaps(dk, c) == key
        out["kyber-py"] = {
            "keygen": lambda: kyber._keygen_internal(d, z),
            "encaps": lambda: kyber._encaps_internal(ek, m),
            "decaps": lambda: kyber.decaps(dk, c),
        }
    except ImportError:
        missing.append("kyber-py (pip install kyber-py)")
    try:
        from cryptography.hazmat.primitives.asymmetric import mlkem as pyca

        size = p.name.split("-")[-1]
        private = getattr(pyca, f"MLKEM{size}PrivateKey")
        public_key = getattr(pyca, f"MLKEM{size}PublicKey")
        theirs = private.from_seed_bytes(d + z)
        public = theirs.public_key()
        assert public.public_bytes_raw() == ek and theirs.decapsulate(c) == key
        their_key, their_c = public.encapsulate()
        assert c_kem.decaps(dk, their_c) == their_key
        # like for like: keys arrive as bytes (tang's API) and are parsed for each call;
        # cryptography's key objects hold Â expanded, which its decaps keeps (a private key
        # loads only from its 64-byte seed, which would time a whole KeyGen)
        out["cryptography"] = {
            "keygen": lambda: private.from_seed_bytes(d + z),
            "encaps": lambda: public_key.from_public_bytes(ek).encapsulate(),
            "decaps": lambda: theirs.decapsulate(c),
        }
    except ImportError:
        missing.append("cryptography (pip install 'cryptography>=50')")
    except AttributeError:
        missing.append(f"cryptography's {p.name} (it has ML-KEM-768 and -1024)")
    return out, missing


def batch(fn: Callable[[], object], seconds: float = 0.02) -> tuple[Callable[[], None], int]:
    """``fn`` repeated enough times to take about ``seconds``, and how many."""
    once = max(harness_once(fn)[0], 1e-7)
    n = max(1, round(seconds / once))

    def run() -> None:
        for _ in range(n):
            fn()

    return run, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--params", default="ML-KEM-768", choices=[p.name for p in mlkem.PARAMETER_SETS]
    )
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    p = next(q for q in mlkem.PARAMETER_SETS if q.name == args.params)
    found, missing = contenders(p)
    names = list(found)
    print(f"{p.name}, fastest of {args.repeat} interleaved rounds, one core")
    print(f"{'':14}" + "".join(f"{n:>16}" for n in names))
    per_call: dict[str, dict[str, float]] = {n: {} for n in names}
    for op in OPS:
        runs = [batch(found[n][op]) for n in names]
        best = fastest_interleaved([r for r, _ in runs], args.repeat)
        for n, (_, count), seconds in zip(names, runs, best):
            per_call[n][op] = seconds / count
        print(f"{op + ' /s':14}" + "".join(f"{1 / per_call[n][op]:16,.0f}" for n in names))
    c = per_call["tang C"]
    for peer, verb in (
        ("cryptography", "time ÷ cryptography's"),
        ("kyber-py", "speed × kyber-py's"),
    ):
        if peer not in per_call:
            continue
        ratios = []
        for op in OPS:
            ratio = (
                c[op] / per_call[peer][op] if peer == "cryptography" else per_call[peer][op] / c[op]
            )
            ratios.append(f"{op} {ratio:.2f}")
        print(f"tang C {verb}: " + ", ".join(ratios))
    python = per_call["tang Python"]
    print(
        "tang C speed × tang Python's: " + ", ".join(f"{op} {python[op] / c[op]:.0f}" for op in OPS)
    )
    for m in missing:
        print(f"left out: {m}")


if __name__ == "__main__":
    main()
