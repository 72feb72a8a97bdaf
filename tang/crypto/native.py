"""A parameter set's C file (``tang.crypto.emit``) built at ``-O2`` and called through
ctypes: the whole KEM, hashing included, runs in the compiled code."""

from __future__ import annotations

import ctypes
import functools

from .emit import c_source, prefix
from .kpke import Params
from .runner import build_c


class Native:
    """The compiled KEM of parameter set ``p``: the internal algorithms, bytes in and out
    (inputs are checked by ``tang.crypto.mlkem`` before they reach it)."""

    def __init__(self, p: Params) -> None:
        self.p = p
        library = ctypes.CDLL(str(build_c(c_source(p))))
        pre = prefix(p)
        self._keygen = getattr(library, f"{pre}_keygen_internal")
        self._encaps = getattr(library, f"{pre}_encaps_internal")
        self._decaps = getattr(library, f"{pre}_decaps")
        for fn in (self._keygen, self._encaps, self._decaps):
            fn.restype = ctypes.c_int

    def keygen_internal(self, d: bytes, z: bytes) -> tuple[bytes, bytes]:
        ek = ctypes.create_string_buffer(self.p.ek_size)
        dk = ctypes.create_string_buffer(self.p.dk_size)
        self._call(self._keygen, d, z, ek, dk)
        return ek.raw, dk.raw

    def encaps_internal(self, ek: bytes, m: bytes) -> tuple[bytes, bytes]:
        key = ctypes.create_string_buffer(32)
        c = ctypes.create_string_buffer(self.p.ciphertext_size)
        self._call(self._encaps, ek, m, key, c)
        return key.raw, c.raw

    def decaps(self, dk: bytes, c: bytes) -> bytes:
        key = ctypes.create_string_buffer(32)
        self._call(self._decaps, dk, c, key)
        return key.raw

    def _call(self, fn: ctypes._CFuncPtr, *args: object) -> None:
        if fn(*args) != 0:
            raise ValueError(f"{self.p.name}: the compiled KEM refused its input")


@functools.cache
def native(p: Params) -> Native:
    """The compiled KEM of ``p``'s parameter set, built once per process (and once per
    machine: the library is cached on disk)."""
    return Native(p.base)


__all__ = ["Native", "native"]
