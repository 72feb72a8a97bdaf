"""Constant-time checking under valgrind, the ctgrind / TIMECOP way: a harness marks the
secret seeds *undefined* (``VALGRIND_MAKE_MEM_UNDEFINED``), and memcheck then reports every
branch (“conditional jump or move depends on uninitialised value”) and every memory
address (“use of uninitialised value”) computed from them. The printed C marks what is
public (ρ, the key, the ciphertext) with ``TANG_DECLASSIFY``; the harness marks the shared
keys public only after the KEM has returned them, to compare them.

The harness runs KeyGen, Encaps, Decaps and Decaps of a tampered ciphertext (the implicit
rejection path) of one parameter set.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..tensor.comprehension import TensorGraph
from .emit import c_source, prefix
from .kpke import Params

HARNESS = r"""
#include <stdio.h>
#include <valgrind/memcheck.h>
#define TANG_DECLASSIFY(p, n) VALGRIND_MAKE_MEM_DEFINED(p, n)
#include "mlkem.c"

int main(void) {
    uint8_t d[32], z[32], m[32], ek[EK_SIZE], dk[DK_SIZE], c[CT_SIZE];
    uint8_t shared[32], decapsulated[32], rejected[32];
    for (int i = 0; i < 32; i++) {
        d[i] = (uint8_t)i, z[i] = (uint8_t)(101 * i), m[i] = (uint8_t)(7 * i);
    }
    VALGRIND_MAKE_MEM_UNDEFINED(d, 32); /* the secrets: everything derived from them is too */
    VALGRIND_MAKE_MEM_UNDEFINED(z, 32);
    VALGRIND_MAKE_MEM_UNDEFINED(m, 32);
    if (PREFIX_keygen_internal(d, z, ek, dk) != 0) return 10;
    if (PREFIX_encaps_internal(ek, m, shared, c) != 0) return 11;
    if (PREFIX_decaps(dk, c, decapsulated) != 0) return 12;
    c[0] ^= 1; /* a tampered ciphertext: implicit rejection */
    if (PREFIX_decaps(dk, c, rejected) != 0) return 13;
    VALGRIND_MAKE_MEM_DEFINED(shared, 32);
    VALGRIND_MAKE_MEM_DEFINED(decapsulated, 32);
    VALGRIND_MAKE_MEM_DEFINED(rejected, 32);
    int agree = memcmp(shared, decapsulated, 32) == 0, differ = memcmp(shared, rejected, 32) != 0;
    printf("keys agree: %d, rejected key differs: %d\n", agree, differ);
    return agree && differ ? 0 : 1;
}
"""

BRANCH = "Conditional jump or move depends on uninitialised value"
ADDRESS = "Use of uninitialised value"


@dataclass(frozen=True)
class Report:
    """What memcheck said: the count of secret-dependent branches and addresses (each
    distinct report once), the harness's exit code and output, and memcheck's log."""

    branches: int
    addresses: int
    errors: int
    returncode: int
    stdout: str
    log: str

    @property
    def constant_time(self) -> bool:
        return self.errors == 0 and self.returncode == 0


def available() -> str | None:
    """Why the check cannot run here (no valgrind, its header or a C compiler), or None."""
    if shutil.which("valgrind") is None:
        return "valgrind is not installed (Debian: apt install valgrind)"
    if not Path("/usr/include/valgrind/memcheck.h").exists():
        return "valgrind's memcheck.h is missing (Debian: apt install valgrind)"
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        return "no C compiler (cc or gcc)"
    return None


def check(
    p: Params,
    *,
    replace: Mapping[str, TensorGraph] | None = None,
    taint_check: bool = True,
    flags: tuple[str, ...] = ("-O2", "-g"),
) -> Report:
    """Print ``p`` as C (``replace``: variant graphs by role, see ``c_source``), build the
    harness with ``flags`` and run it under memcheck."""
    why = available()
    if why:
        raise RuntimeError(why)
    source = c_source(p, replace=replace, check=taint_check)
    compiler = shutil.which("cc") or shutil.which("gcc")
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "mlkem.c").write_text(source)
        Path(tmp, "harness.c").write_text(HARNESS.replace("PREFIX_", f"{prefix(p)}_"))
        subprocess.run(
            [compiler, *flags, "harness.c", "-o", "harness"],  # type: ignore[list-item]
            cwd=tmp,
            check=True,
            capture_output=True,
        )
        out = subprocess.run(
            ["valgrind", "--tool=memcheck", "--log-file=memcheck.log", "./harness"],
            cwd=tmp,
            capture_output=True,
            text=True,
            check=False,
        )
        log = Path(tmp, "memcheck.log").read_text()
    summary = re.search(r"ERROR SUMMARY: (\d+) errors", log)
    return Report(
        log.count(BRANCH),
        log.count(ADDRESS),
        int(summary.group(1)) if summary else -1,
        out.returncode,
        out.stdout,
        log,
    )


__all__ = ["ADDRESS", "BRANCH", "HARNESS", "Report", "available", "check"]
