"""``python -m tang.crypto``: print a parameter set of ML-KEM as one C file, or check it.

python -m tang.crypto c ML-KEM-768 [-o mlkem768.c]   # taint-checked, then printed
python -m tang.crypto taint ML-KEM-768                 # each graph's secret outputs
python -m tang.crypto valgrind ML-KEM-768              # the ctgrind check
"""

from __future__ import annotations

import argparse
import sys

from . import mlkem

SETS = {p.name: p for p in mlkem.PARAMETER_SETS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tang.crypto", description=__doc__.split("\n")[0]
    )
    parser.add_argument("command", choices=("kem", "c", "taint", "valgrind"))
    parser.add_argument("params", choices=sorted(SETS), help="the parameter set")
    parser.add_argument("-o", "--output", help="the C file to write (default: standard output)")
    parser.add_argument(
        "--language", choices=("python", "c"), default="python", help="kem: how to run it"
    )
    args = parser.parse_args(argv)
    p = SETS[args.params]
    if args.command == "kem":
        return _kem(p.on(args.language))
    if args.command == "c":
        from .emit import c_source

        text = c_source(p)
        if args.output:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {args.output}: {p.name}, {len(text.splitlines())} lines")
        else:
            sys.stdout.write(text)
        return 0
    if args.command == "taint":
        from ..tensor.passes import taint
        from .emit import ROLES, graphs

        for role, graph in graphs(p).items():
            secret = ROLES[role][2]
            found = taint.check(graph, secret)
            outs = ", ".join(
                f"{o} ← {', '.join(sorted(found[o])) or 'public'}" for o in graph.outputs
            )
            print(f"{role}: {len(graph.comprehensions)} comprehensions, no leak; {outs}")
        return 0
    from . import ctgrind

    why = ctgrind.available()
    if why:
        print(f"cannot run the valgrind check: {why}", file=sys.stderr)
        return 2
    report = ctgrind.check(p)
    print(
        f"{p.name} under memcheck: {report.branches} secret-dependent branches, "
        f"{report.addresses} secret-dependent addresses, {report.errors} errors; "
        f"{report.stdout.strip()}"
    )
    return 0 if report.constant_time else 1


def _kem(p: mlkem.MLKEM) -> int:
    """One exchange: Alice's keys, Bob's shared secret and ciphertext, Alice's secret; and
    a tampered ciphertext, which gives an unrelated secret (implicit rejection)."""
    import time

    start = time.perf_counter()
    ek, dk = p.keygen()
    keygen = time.perf_counter()
    key, c = p.encaps(ek)
    encaps = time.perf_counter()
    opened = p.decaps(dk, c)
    decaps = time.perf_counter()
    rejected = p.decaps(dk, bytes([c[0] ^ 1]) + c[1:])
    print(f"{p.name} ({p.language}): encapsulation key {len(ek)} B, decapsulation key {len(dk)} B")
    print(
        f"  KeyGen {1e3 * (keygen - start):.1f} ms, Encaps {1e3 * (encaps - keygen):.1f} ms, "
        f"Decaps {1e3 * (decaps - encaps):.1f} ms (the first call builds the graphs)"
    )
    print(
        f"  shared secret {key.hex()[:16]}…, ciphertext {len(c)} B; Decaps agrees: {opened == key}"
    )
    print(f"  a tampered ciphertext decapsulates to {rejected.hex()[:16]}… (implicit rejection)")
    return 0 if opened == key and rejected != key else 1


if __name__ == "__main__":
    raise SystemExit(main())
