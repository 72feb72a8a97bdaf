"""Exact geometric predicates on float coordinates: the true sign (-1, 0, +1) of the
orientation and in-circle/in-sphere determinants, never the sign of a rounding error.

Signs follow Shewchuk's predicates.c ("Adaptive Precision Floating-Point Arithmetic and
Fast Robust Geometric Predicates", 1997):

- ``orient2d(a, b, c)`` > 0 when a, b, c run counter-clockwise; 0 when collinear.
- ``orient3d(a, b, c, d)`` > 0 when d lies below the plane through a, b, c, "below" being the
  side from which a, b, c do *not* appear counter-clockwise; that is, when d is on the
  opposite side from the normal (b - a) × (c - a). It is the sign of det[a-d; b-d; c-d],
  six times the signed volume of the tetrahedron.
- ``incircle(a, b, c, d)`` > 0 when d lies inside the circle through a, b, c given
  counter-clockwise (their clockwise order flips the sign); 0 when the four are cocircular.
- ``insphere(a, b, c, d, e)`` > 0 when e lies inside the sphere through a, b, c, d given
  with orient3d(a, b, c, d) > 0 (the other orientation flips the sign); 0 when cospherical.

Each is the determinant of the points' rows (x, y[, z], [|p|²,] 1), shifted to the last
point as in Shewchuk's fast expressions.

How: a floating-point filter first, Shewchuk's first-stage test. It evaluates his expression
exactly in his order, together with the "permanent" (the same sum with every term made
positive), and trusts the sign when |det| exceeds errboundA·permanent, the bound his paper
proves for that evaluation (errboundA below, from ε = 2⁻⁵³). That decides nearly every call.
Otherwise the coordinates become integers exactly (``float.as_integer_ratio`` and one common
power-of-two scale) and the determinant is evaluated in Python integers. The bound assumes
no underflow, so the filter also defers to the exact path when a coordinate difference is
nonzero but below 2⁻¹⁴⁰: with none such, every difference is a multiple of 2⁻¹⁹², every
value the filter forms (of degree ≤ 5) a multiple of 2⁻⁹⁶⁰, and nothing gets near the
subnormals. Overflow and non-finite input make the permanent inf or nan, which no |det|
exceeds, so they too reach the exact path, where bad input raises.

Coordinates are floats; ints and other reals are taken when they are exactly a float
(``Fraction(1, 2)``, ``numpy.float32``); points are any 2- or 3-sequences (``Vec2``, ``Vec3``,
tuples, numpy rows). Wrong dimensions, non-numbers, inexact or non-finite values raise an
error naming the argument. (One blind spot: an int beyond 2⁵³ given together with floats is
rounded by Python's own int-float arithmetic on the fast path before any check sees it.)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

Point = Sequence[float]

EPSILON = 2.0**-53  # Shewchuk's epsilon: half an ulp of 1, the relative rounding error bound
CCW_ERRBOUND_A = (3.0 + 16.0 * EPSILON) * EPSILON  # ccwerrboundA
O3D_ERRBOUND_A = (7.0 + 56.0 * EPSILON) * EPSILON  # o3derrboundA
ICC_ERRBOUND_A = (10.0 + 96.0 * EPSILON) * EPSILON  # iccerrboundA
ISP_ERRBOUND_A = (16.0 + 224.0 * EPSILON) * EPSILON  # isperrboundA
# A coordinate difference this small but nonzero could make a product underflow, which the
# bounds above do not cover: such calls take the exact path.
TINY = 2.0**-140


def orient2d(a: Point, b: Point, c: Point) -> int:
    """+1 if a, b, c are counter-clockwise, -1 if clockwise, 0 if collinear (exactly)."""
    try:
        ax, ay = a
        bx, by = b
        cx, cy = c
        acx = ax - cx
        bcx = bx - cx
        acy = ay - cy
        bcy = by - cy
        detleft = acx * bcy
        detright = acy * bcx
        det = detleft - detright
        errbound = CCW_ERRBOUND_A * (abs(detleft) + abs(detright))
    except (TypeError, ValueError, ArithmeticError):
        return _orient2d_exact(a, b, c)  # not two numbers per point: it says what is wrong
    if det.__class__ is float or isinstance(det, float):
        if det > errbound:
            sign = 1
        elif -det > errbound:
            sign = -1
        else:
            return _orient2d_exact(a, b, c)
        if not (
            (-TINY < acx < TINY and acx)
            or (-TINY < bcx < TINY and bcx)
            or (-TINY < acy < TINY and acy)
            or (-TINY < bcy < TINY and bcy)
        ):
            return sign
    return _orient2d_exact(a, b, c)


def orient3d(a: Point, b: Point, c: Point, d: Point) -> int:
    """+1 if d lies below the plane through a, b, c (the side opposite (b-a)×(c-a)), -1 if
    above, 0 if the four are coplanar (exactly)."""
    try:
        ax, ay, az = a
        bx, by, bz = b
        cx, cy, cz = c
        dx, dy, dz = d
        adx = ax - dx
        bdx = bx - dx
        cdx = cx - dx
        ady = ay - dy
        bdy = by - dy
        cdy = cy - dy
        adz = az - dz
        bdz = bz - dz
        cdz = cz - dz
        bdxcdy = bdx * cdy
        cdxbdy = cdx * bdy
        cdxady = cdx * ady
        adxcdy = adx * cdy
        adxbdy = adx * bdy
        bdxady = bdx * ady
        det = adz * (bdxcdy - cdxbdy) + bdz * (cdxady - adxcdy) + cdz * (adxbdy - bdxady)
        permanent = (
            (abs(bdxcdy) + abs(cdxbdy)) * abs(adz)
            + (abs(cdxady) + abs(adxcdy)) * abs(bdz)
            + (abs(adxbdy) + abs(bdxady)) * abs(cdz)
        )
        errbound = O3D_ERRBOUND_A * permanent
    except (TypeError, ValueError, ArithmeticError):
        return _orient3d_exact(a, b, c, d)
    if det.__class__ is float or isinstance(det, float):
        if det > errbound:
            sign = 1
        elif -det > errbound:
            sign = -1
        else:
            return _orient3d_exact(a, b, c, d)
        if not (
            (-TINY < adx < TINY and adx)
            or (-TINY < bdx < TINY and bdx)
            or (-TINY < cdx < TINY and cdx)
            or (-TINY < ady < TINY and ady)
            or (-TINY < bdy < TINY and bdy)
            or (-TINY < cdy < TINY and cdy)
            or (-TINY < adz < TINY and adz)
            or (-TINY < bdz < TINY and bdz)
            or (-TINY < cdz < TINY and cdz)
        ):
            return sign
    return _orient3d_exact(a, b, c, d)


def incircle(a: Point, b: Point, c: Point, d: Point) -> int:
    """+1 if d lies inside the circle through counter-clockwise a, b, c, -1 if outside, 0 if
    on it (exactly); the sign flips when a, b, c are clockwise."""
    try:
        ax, ay = a
        bx, by = b
        cx, cy = c
        dx, dy = d
        adx = ax - dx
        bdx = bx - dx
        cdx = cx - dx
        ady = ay - dy
        bdy = by - dy
        cdy = cy - dy
        bdxcdy = bdx * cdy
        cdxbdy = cdx * bdy
        alift = adx * adx + ady * ady
        cdxady = cdx * ady
        adxcdy = adx * cdy
        blift = bdx * bdx + bdy * bdy
        adxbdy = adx * bdy
        bdxady = bdx * ady
        clift = cdx * cdx + cdy * cdy
        det = alift * (bdxcdy - cdxbdy) + blift * (cdxady - adxcdy) + clift * (adxbdy - bdxady)
        permanent = (
            (abs(bdxcdy) + abs(cdxbdy)) * alift
            + (abs(cdxady) + abs(adxcdy)) * blift
            + (abs(adxbdy) + abs(bdxady)) * clift
        )
        errbound = ICC_ERRBOUND_A * permanent
    except (TypeError, ValueError, ArithmeticError):
        return _incircle_exact(a, b, c, d)
    if det.__class__ is float or isinstance(det, float):
        if det > errbound:
            sign = 1
        elif -det > errbound:
            sign = -1
        else:
            return _incircle_exact(a, b, c, d)
        if not (
            (-TINY < adx < TINY and adx)
            or (-TINY < bdx < TINY and bdx)
            or (-TINY < cdx < TINY and cdx)
            or (-TINY < ady < TINY and ady)
            or (-TINY < bdy < TINY and bdy)
            or (-TINY < cdy < TINY and cdy)
        ):
            return sign
    return _incircle_exact(a, b, c, d)


def insphere(a: Point, b: Point, c: Point, d: Point, e: Point) -> int:
    """+1 if e lies inside the sphere through a, b, c, d (with orient3d(a, b, c, d) > 0),
    -1 if outside, 0 if on it (exactly); the sign flips for the other orientation."""
    try:
        ax, ay, az = a
        bx, by, bz = b
        cx, cy, cz = c
        dx, dy, dz = d
        ex, ey, ez = e
        aex = ax - ex
        bex = bx - ex
        cex = cx - ex
        dex = dx - ex
        aey = ay - ey
        bey = by - ey
        cey = cy - ey
        dey = dy - ey
        aez = az - ez
        bez = bz - ez
        cez = cz - ez
        dez = dz - ez
        aexbey = aex * bey
        bexaey = bex * aey
        ab = aexbey - bexaey
        bexcey = bex * cey
        cexbey = cex * bey
        bc = bexcey - cexbey
        cexdey = cex * dey
        dexcey = dex * cey
        cd = cexdey - dexcey
        dexaey = dex * aey
        aexdey = aex * dey
        da = dexaey - aexdey
        aexcey = aex * cey
        cexaey = cex * aey
        ac = aexcey - cexaey
        bexdey = bex * dey
        dexbey = dex * bey
        bd = bexdey - dexbey
        abc = aez * bc - bez * ac + cez * ab
        bcd = bez * cd - cez * bd + dez * bc
        cda = cez * da + dez * ac + aez * cd
        dab = dez * ab + aez * bd + bez * da
        alift = aex * aex + aey * aey + aez * aez
        blift = bex * bex + bey * bey + bez * bez
        clift = cex * cex + cey * cey + cez * cez
        dlift = dex * dex + dey * dey + dez * dez
        det = (dlift * abc - clift * dab) + (blift * cda - alift * bcd)
        aezplus = abs(aez)
        bezplus = abs(bez)
        cezplus = abs(cez)
        dezplus = abs(dez)
        aexbeyplus = abs(aexbey)
        bexaeyplus = abs(bexaey)
        bexceyplus = abs(bexcey)
        cexbeyplus = abs(cexbey)
        cexdeyplus = abs(cexdey)
        dexceyplus = abs(dexcey)
        dexaeyplus = abs(dexaey)
        aexdeyplus = abs(aexdey)
        aexceyplus = abs(aexcey)
        cexaeyplus = abs(cexaey)
        bexdeyplus = abs(bexdey)
        dexbeyplus = abs(dexbey)
        permanent = (
            (
                (cexdeyplus + dexceyplus) * bezplus
                + (dexbeyplus + bexdeyplus) * cezplus
                + (bexceyplus + cexbeyplus) * dezplus
            )
            * alift
            + (
                (dexaeyplus + aexdeyplus) * cezplus
                + (aexceyplus + cexaeyplus) * dezplus
                + (cexdeyplus + dexceyplus) * aezplus
            )
            * blift
            + (
                (aexbeyplus + bexaeyplus) * dezplus
                + (bexdeyplus + dexbeyplus) * aezplus
                + (dexaeyplus + aexdeyplus) * bezplus
            )
            * clift
            + (
                (bexceyplus + cexbeyplus) * aezplus
                + (cexaeyplus + aexceyplus) * bezplus
                + (aexbeyplus + bexaeyplus) * cezplus
            )
            * dlift
        )
        errbound = ISP_ERRBOUND_A * permanent
    except (TypeError, ValueError, ArithmeticError):
        return _insphere_exact(a, b, c, d, e)
    if det.__class__ is float or isinstance(det, float):
        if det > errbound:
            sign = 1
        elif -det > errbound:
            sign = -1
        else:
            return _insphere_exact(a, b, c, d, e)
        if not (
            (-TINY < aex < TINY and aex)
            or (-TINY < bex < TINY and bex)
            or (-TINY < cex < TINY and cex)
            or (-TINY < dex < TINY and dex)
            or (-TINY < aey < TINY and aey)
            or (-TINY < bey < TINY and bey)
            or (-TINY < cey < TINY and cey)
            or (-TINY < dey < TINY and dey)
            or (-TINY < aez < TINY and aez)
            or (-TINY < bez < TINY and bez)
            or (-TINY < cez < TINY and cez)
            or (-TINY < dez < TINY and dez)
        ):
            return sign
    return _insphere_exact(a, b, c, d, e)


# ---------------------------------------------------------------------------------------
# the exact path: check the input, scale it to integers, evaluate in Python integers


def _orient2d_exact(a: Any, b: Any, c: Any) -> int:
    ax, ay, bx, by, cx, cy = _integers(_coordinates(2, a=a, b=b, c=c))
    return _sign((ax - cx) * (by - cy) - (ay - cy) * (bx - cx))


def _orient3d_exact(a: Any, b: Any, c: Any, d: Any) -> int:
    ax, ay, az, bx, by, bz, cx, cy, cz, dx, dy, dz = _integers(_coordinates(3, a=a, b=b, c=c, d=d))
    adx, ady, adz = ax - dx, ay - dy, az - dz
    bdx, bdy, bdz = bx - dx, by - dy, bz - dz
    cdx, cdy, cdz = cx - dx, cy - dy, cz - dz
    det = adz * (bdx * cdy - cdx * bdy) + bdz * (cdx * ady - adx * cdy)
    return _sign(det + cdz * (adx * bdy - bdx * ady))


def _incircle_exact(a: Any, b: Any, c: Any, d: Any) -> int:
    ax, ay, bx, by, cx, cy, dx, dy = _integers(_coordinates(2, a=a, b=b, c=c, d=d))
    adx, ady = ax - dx, ay - dy
    bdx, bdy = bx - dx, by - dy
    cdx, cdy = cx - dx, cy - dy
    return _sign(
        (adx * adx + ady * ady) * (bdx * cdy - cdx * bdy)
        + (bdx * bdx + bdy * bdy) * (cdx * ady - adx * cdy)
        + (cdx * cdx + cdy * cdy) * (adx * bdy - bdx * ady)
    )


def _insphere_exact(a: Any, b: Any, c: Any, d: Any, e: Any) -> int:
    coords = _integers(_coordinates(3, a=a, b=b, c=c, d=d, e=e))
    ex, ey, ez = coords[12:]
    aex, aey, aez, bex, bey, bez, cex, cey, cez, dex, dey, dez = (
        v - o for v, o in zip(coords[:12], (ex, ey, ez) * 4)
    )
    ab = aex * bey - bex * aey
    bc = bex * cey - cex * bey
    cd = cex * dey - dex * cey
    da = dex * aey - aex * dey
    ac = aex * cey - cex * aey
    bd = bex * dey - dex * bey
    abc = aez * bc - bez * ac + cez * ab
    bcd = bez * cd - cez * bd + dez * bc
    cda = cez * da + dez * ac + aez * cd
    dab = dez * ab + aez * bd + bez * da
    alift = aex * aex + aey * aey + aez * aez
    blift = bex * bex + bey * bey + bez * bez
    clift = cex * cex + cey * cey + cez * cez
    dlift = dex * dex + dey * dey + dez * dez
    return _sign(dlift * abc - clift * dab + blift * cda - alift * bcd)


def _sign(v: int) -> int:
    return (v > 0) - (v < 0)


def _integers(coords: list[float]) -> list[int]:
    """The coordinates times one common power of two, as exact integers (the sign of a
    homogeneous polynomial in them is unchanged)."""
    ratios = [x.as_integer_ratio() for x in coords]  # (n, 2^k): exact for every float
    top = max(den for _, den in ratios).bit_length()
    return [num << (top - den.bit_length()) for num, den in ratios]


def _coordinates(dim: int, **points: Any) -> list[float]:
    """All coordinates of the named points, checked, in order (errors name the point)."""
    out: list[float] = []
    for name, p in points.items():
        try:
            coords = list(p)
        except TypeError:
            raise TypeError(
                f"point {name} must be a sequence of {dim} coordinates, got {type(p).__name__}"
            ) from None
        if len(coords) != dim:
            raise ValueError(
                f"point {name} has {len(coords)} coordinates; this predicate takes "
                f"{dim}-dimensional points"
            )
        out.extend(_coordinate(x, f"{name}[{i}]") for i, x in enumerate(coords))
    return out


def _coordinate(x: Any, where: str) -> float:
    """``x`` as a float, if it is a finite real number that a float holds exactly."""
    if x.__class__ is float and x - x == 0.0:  # the common case: a finite float
        return x
    if not isinstance(x, numbers.Real):  # (a bool is an int to Python, and so here)
        raise TypeError(f"coordinate {where} must be a real number, got {type(x).__name__}")
    try:
        f = float(x)
    except OverflowError:
        raise ValueError(f"coordinate {where} = {x!r} is beyond the float range") from None
    if not math.isfinite(f):
        raise ValueError(f"coordinate {where} = {f!r} is not finite")
    if f != x:
        raise ValueError(
            f"coordinate {where} = {x!r} is not exactly a float (round it with float() first)"
        )
    return f
