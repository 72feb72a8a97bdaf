"""Constant-time cryptography on mod-q tensors: ML-KEM (FIPS 203) written once as integer
tensor graphs (``tang.crypto.mlkem``), checked by the taint pass
(``tang.tensor.passes.taint``), printed as Python or as C (``tang.crypto.emit``) and
checked under valgrind (``tang.crypto.ctgrind``).

    from tang.crypto import mlkem
    ek, dk = mlkem.ML_KEM_768.keygen()
"""
