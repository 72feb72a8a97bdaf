// Numbers from the worker, as text for people. The worker sends finite floats as numbers and
// non-finite ones as the strings "nan", "inf", "-inf" (JSON has no spelling for them).

/** A number from the worker (floats, or "nan"/"inf"/"-inf" strings) as a JS number. */
export function num(v) {
  if (typeof v === "number") return v;
  if (v === "inf") return Infinity;
  if (v === "-inf") return -Infinity;
  return NaN;
}

/** Short text for a number: 6 significant digits, exponent form when tiny or huge. */
export function fmt(v, digits = 6) {
  const x = num(v);
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "∞" : "−∞";
  if (x === 0) return "0";
  const a = Math.abs(x);
  const text = a >= 1e-4 && a < 1e6 ? String(Number(x.toPrecision(digits))) : x.toExponential(2);
  return text.replace("-", "−");
}

/** Error sizes: "3.6e-7". */
export const fmtErr = (x) => (x === 0 ? "0" : x.toExponential(1).replace("-", "−"));
