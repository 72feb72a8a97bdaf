// The interrupt buffer the page (rpc.js) shares with the worker (worker.js): an Int32Array
// on a SharedArrayBuffer, one slot per fact, named here and nowhere else.
//
//   SIGNAL     Pyodide's interrupt slot: the page writes SIGINT, Python raises at its next check
//   RUNNING    the id of the request running now (NONE between requests)        worker writes
//   CANCELLED  the id the page cancelled last; the worker checks it before a start  page writes
//   ACKED      the id whose cancel the worker took without an interrupt (async)  worker writes
//   TARGET     the id the last SIGINT is meant for: Python raises it only inside that request
//              (demos.api.route_interrupts)                                         page writes
//
// Only with cross-origin isolation (COOP/COEP) does the page have a SharedArrayBuffer; without
// one, there is no buffer and a running call is left to finish.

export const SLOT = Object.freeze({ SIGNAL: 0, RUNNING: 1, CANCELLED: 2, ACKED: 3, TARGET: 4 });
export const SLOTS = Object.keys(SLOT).length;
export const NONE = -1; // no request
export const SIGINT = 2; // what Pyodide reads from SIGNAL

/** A fresh buffer (every id slot NONE), or null where SharedArrayBuffer is unavailable. */
export function interruptBuffer() {
  if (!globalThis.crossOriginIsolated) return null;
  const buffer = new Int32Array(new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT));
  buffer.fill(NONE);
  buffer[SLOT.SIGNAL] = 0;
  return buffer;
}
