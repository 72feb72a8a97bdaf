// Keyboard focus that survives a busy card. A control disabled while it has focus (Train
// while the model trains, Run while a run goes, New round while the optimiser works) drops
// focus to <body>, and a keyboard user starts again from the top of the page. keepFocus()
// moves focus to the control that takes over instead (Train → Stop), once, for the page.

const CONTROLS = "button, input, select, textarea, a[href], [tabindex]:not([tabindex='-1'])";

const usable = (el) => el.isConnected && !el.disabled && el.checkVisibility();

/** Where focus goes from `lost`: the control its `data-focus-next` selector names in its
 * card, when usable; else the usable control of `group` nearest to `lost` in document order,
 * the one after it first (Train → Stop, Stop → Resume); null when none is usable. */
function successor(group, lost) {
  const named = lost.dataset.focusNext && lost.closest(".panel-body")?.querySelector(lost.dataset.focusNext);
  if (named && usable(named)) return named;
  const all = [...group.querySelectorAll(CONTROLS)].filter((c) => c === lost || usable(c));
  const at = all.indexOf(lost);
  if (at < 0) return all[0] ?? null;
  for (let d = 1; d < all.length; d++) {
    const next = all[at + d] ?? all[at - d];
    if (next) return next;
  }
  return null;
}

/** Hold focus on `group` (focusable by script, not a tab stop) until one of its controls is
 * usable again, then move it there; a move elsewhere by the visitor ends the hold. */
function hold(group, lost) {
  if (!group.hasAttribute("tabindex")) group.tabIndex = -1;
  group.focus({ preventScroll: true });
  const watch = new MutationObserver(() => {
    if (document.activeElement !== group) return watch.disconnect();
    const next = successor(group, lost);
    if (next) {
      watch.disconnect();
      next.focus({ preventScroll: true });
    }
  });
  watch.observe(group, { subtree: true, attributes: true, attributeFilter: ["disabled", "hidden"] });
}

/** Watch `root` (the page) once: when the focused control becomes disabled or hidden, focus
 * moves to the nearest usable control of its group (its parent element), else the group
 * holds it until one is usable. */
export function keepFocus(root = document) {
  root.addEventListener("focusout", (e) => {
    const lost = e.target;
    if (e.relatedTarget || !(lost instanceof HTMLElement) || usable(lost)) return;
    const group = lost.parentElement;
    if (!group) return;
    // after the browser has finished moving focus away (to <body>)
    queueMicrotask(() => {
      if (document.activeElement !== document.body && document.activeElement !== null) return;
      const next = successor(group, lost);
      if (next) next.focus({ preventScroll: true });
      else hold(group, lost);
    });
  });
}
