// Bytes across the worker boundary and to and from the user's disk: JSON carries binary
// files (weights) as base64, and a download is a temporary link clicked once.
import { h } from "./dom.js";

/** Base64 of `bytes` (a Uint8Array), in chunks so large files do not overflow the stack. */
export function toBase64(bytes) {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(bin);
}

/** The bytes a base64 string holds, as a Uint8Array. */
export function fromBase64(text) {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Offer `bytes` to the user as a download named `filename`. */
export function downloadBytes(bytes, filename) {
  const blob = new Blob([bytes], { type: "application/octet-stream" });
  const url = URL.createObjectURL(blob);
  const a = h("a", { href: url, download: filename });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
