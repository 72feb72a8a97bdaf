// The orbit card's DOM and drawing (./orbit.js is its controller): the canvas, the buttons,
// the readouts, the desktop command, and one frame: bodies, target, shots, tang's iterates;
// below the buttons, once tang has tried, its swarm: a heat map of the miss over speed ×
// heading (log scale, a legend, the best candidate marked) and which device flew it.
import { readouts } from "../lib/card.js";
import { cross, cssColor, disc, fitCanvas } from "../lib/canvas.js";
import { commandLine } from "../lib/command.js";
import { h } from "../lib/dom.js";
import { fmt } from "../lib/format.js";

export const FLY_S = 1.2; // how long a shot's flight takes to draw
const SHOT_COLORS = ["#0891b2", "#d97706", "#db2777"];

/** Build the card in `el`; returns {canvas, tryButton, stopButton, againButton, command,
 * swarm: {figure, note, canvas()}, show(readout, text)}. */
export function orbitView(el) {
  const canvas = h("canvas", {
    className: "orbit-canvas", role: "img", tabIndex: 0,
    "aria-label": "A planet, its moon, a launch pad and a target. Drag from the pad to " +
      "launch a probe: the drag's direction is the heading, its length the speed. Or use " +
      "the arrow keys to aim (left and right: heading, up and down: speed) and Enter to launch.",
  });
  const tryButton = h("button", { type: "button", className: "primary", disabled: true },
    "Let tang try");
  const stopButton = h("button", { type: "button", disabled: true }, "Stop");
  // a new round disables itself: keyboard focus goes on to the map, to aim (lib/focus.js)
  const againButton = h("button", { type: "button", disabled: true, dataset: { focusNext: ".orbit-canvas" } },
    "New round");
  const { list, show } = readouts([
    ["Status", "status"], ["Your best miss", "best"], ["tang's swarm", "swarm"],
    ["tang's miss", "tang"],
  ]);
  const command = commandLine("python -m demos.orbit --swarm 4096"); // what "Let tang try" does
  const swarm = swarmView();
  el.append(
    h("p", { className: "demo-what" }, "tang differentiates the miss through all 1,600 " +
      "steps of the flight with one dual number carrying two tangents (speed and heading): " +
      "for thousands of shots at once in one WebGPU kernel, then for the best one as it " +
      "walks downhill."),
    canvas,
    h("div", { className: "orbit-buttons" }, tryButton, stopButton, againButton),
    swarm.figure, list, command,
  );
  return { canvas, tryButton, stopButton, againButton, command, swarm, show };
}

/** The swarm's figure, hidden until a swarm has flown: its heat map and a caption. The map's
 * canvas is made by the first swarm (`canvas()`): until then the card has one canvas, the
 * scene's. */
function swarmView() {
  const note = h("figcaption", { className: "orbit-swarm-note" });
  const figure = h("figure", { className: "orbit-swarm-figure", hidden: true }, note);
  let map = null;
  const canvas = () => {
    map ??= figure.insertBefore(h("canvas", { className: "orbit-swarm", role: "img" }), note);
    return map;
  };
  return { figure, note, canvas };
}

/**
 * Draw one frame. `view` is web/lib/world.js's mapping; `scene` is orbit.scene; `s` holds
 * {shots, best, iterates, flying: {shot, t} | null, aim: {speed, heading_deg} | null}.
 */
export function drawOrbit(canvas, view, scene, s) {
  const { ctx, width, height } = fitCanvas(canvas);
  view.fit(width, height);
  const colors = {
    fg: cssColor(canvas, "--fg", "#1b1e28"),
    muted: cssColor(canvas, "--muted", "#5d6475"),
    accent: cssColor(canvas, "--accent", "#4f46e5"),
  };
  ctx.clearRect(0, 0, width, height);
  ctx.lineCap = "round";
  ctx.lineJoin = "round";
  drawScene(ctx, view, scene, cssColor(canvas, "--line", "#e2e5ee"), colors.muted);
  drawFlights(ctx, view, s, colors);
  // the nearest point of the best shot so far (tang's, once it has one)
  const lead = s.iterates[s.iterates.length - 1] ?? s.best;
  if (lead && (!s.flying || s.flying.t >= FLY_S)) {
    ctx.strokeStyle = colors.muted;
    ctx.setLineDash([2, 3]);
    ctx.lineWidth = 1;
    segment(ctx, view.toPx(lead.nearest), view.toPx(scene.target));
    ctx.setLineDash([]);
  }
  // the pad, and the launch arrow while aiming
  const [px, py] = view.toPx(scene.pad);
  ctx.fillStyle = "#15803d";
  ctx.fillRect(px - 6, py - 6, 12, 12);
  if (s.aim) {
    const rad = (s.aim.heading_deg * Math.PI) / 180;
    const [ax, ay] = view.toPx([scene.pad[0] + s.aim.speed * Math.cos(rad),
      scene.pad[1] + s.aim.speed * Math.sin(rad)]);
    ctx.strokeStyle = colors.fg;
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.moveTo(px, py);
    ctx.lineTo(ax, ay);
    const back = Math.atan2(ay - py, ax - px) + Math.PI;
    for (const turn of [-0.4, 0.4]) {
      ctx.moveTo(ax, ay);
      ctx.lineTo(ax + 10 * Math.cos(back + turn), ay + 10 * Math.sin(back + turn));
    }
    ctx.stroke();
  }
}

/** The speed-1 ring around the pad, the bodies and the target. */
function drawScene(ctx, { toPx, k }, scene, line, muted) {
  // speed 1 around the pad: the circular speed (a drag to this ring circles the planet)
  const [px, py] = toPx(scene.pad);
  ctx.strokeStyle = line;
  ctx.setLineDash([4, 4]);
  ctx.beginPath();
  ctx.arc(px, py, k, 0, 2 * Math.PI);
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.fillStyle = muted;
  ctx.font = "11px system-ui, sans-serif";
  ctx.textAlign = "center";
  ctx.fillText("speed 1: a circular orbit", px, py - k - 4);

  for (const b of scene.bodies) {
    ctx.fillStyle = b.name === scene.heaviest ? "#64748b" : "#94a3b8";
    disc(ctx, toPx([b.x, b.y]), b.radius * k);
  }
  // the target: a ring and a cross
  const [tx, ty] = toPx(scene.target);
  ctx.strokeStyle = "#dc2626";
  ctx.lineWidth = 2;
  ctx.beginPath();
  ctx.arc(tx, ty, 9, 0, 2 * Math.PI);
  cross(ctx, [tx, ty], 13);
  ctx.stroke();
}

/** The player's shots (the best one thicker), then tang's iterates: faint, the last bold;
 * the newest flight drawn up to where it has got. */
function drawFlights(ctx, view, { shots, best, iterates, flying }, { fg, accent }) {
  const path = (points, upTo = points.length) => {
    ctx.beginPath();
    for (let i = 0; i < upTo; i++) ctx.lineTo(...view.toPx(points[i]));
    ctx.stroke();
  };
  shots.forEach((shot, i) => {
    if (flying?.shot === shot) return;
    ctx.strokeStyle = SHOT_COLORS[i % SHOT_COLORS.length];
    ctx.lineWidth = shot === best ? 2.5 : 1.5;
    ctx.globalAlpha = iterates.length ? 0.45 : 1;
    path(shot.path);
  });
  ctx.globalAlpha = 1;
  const lastIt = iterates[iterates.length - 1];
  ctx.strokeStyle = accent;
  for (const it of iterates) {
    if (it === lastIt) continue;
    ctx.globalAlpha = 0.22;
    ctx.lineWidth = 1.2;
    path(it.path);
  }
  ctx.globalAlpha = 1;
  if (lastIt && flying?.shot !== lastIt) {
    ctx.lineWidth = 3;
    path(lastIt.path);
  }
  if (flying) {
    const shot = flying.shot;
    const n = Math.max(2, Math.ceil(shot.path.length * Math.min(1, flying.t / FLY_S)));
    ctx.strokeStyle = iterates.includes(shot) ? accent : SHOT_COLORS[shots.indexOf(shot) % 3];
    ctx.lineWidth = 3;
    path(shot.path, n);
    ctx.fillStyle = fg;
    disc(ctx, view.toPx(shot.path[n - 1]), 4);
  }
}

/** A straight stroke between two CSS-pixel points. */
function segment(ctx, [x0, y0], [x1, y1]) {
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  ctx.lineTo(x1, y1);
  ctx.stroke();
}

// ---------------------------------------------------------------------------------------
// the swarm's heat map: one cell per shot (speed up, heading across), the colour its miss on
// a log scale, bright where the shot passes near the target; a colour bar, the refined
// candidates (white dots), tang's polished shot (a disc in the accent colour) and, on top,
// the swarm's best (the target's red ring and cross)

const HEAT = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]]; // viridis
const MARGIN = { left: 40, right: 60, top: 8, bottom: 32 }; // CSS px around the cells
const DECADES = 6; // the colour scale's depth, in powers of ten of the miss
const images = new WeakMap(); // swarm answer → its cells as a canvas of H × S pixels

/** The colour at t ∈ [0, 1] (0: the largest miss, dark; 1: the smallest, bright). */
function heat(t) {
  const x = Math.min(1, Math.max(0, t)) * (HEAT.length - 1);
  const i = Math.min(HEAT.length - 2, Math.floor(x));
  const f = x - i;
  return HEAT[i].map((c, k) => Math.round(c + f * (HEAT[i + 1][k] - c)));
}

/** log10 of a miss, floored so that a dead-centre hit still has a colour. */
const logMiss = (m) => Math.log10(Math.max(m, 1e-12));

/** The log10 range [lo, hi] of the swarm's finite misses (widened when flat, at most
 * DECADES deep: one near-exact hit does not wash out the rest), or null. */
function missRange(miss) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const m of miss) {
    if (typeof m !== "number" || !Number.isFinite(m)) continue;
    const l = logMiss(m);
    lo = Math.min(lo, l);
    hi = Math.max(hi, l);
  }
  if (lo > hi) return null;
  return hi - lo < 1e-6 ? [lo - 0.5, hi + 0.5] : [Math.max(lo, hi - DECADES), hi];
}

/** The swarm's cells as a small canvas (one pixel a shot, speed up), made once per answer. */
function cellImage(swarm, range) {
  if (images.has(swarm)) return images.get(swarm);
  const { speeds: S, headings: H, miss } = swarm;
  const img = document.createElement("canvas");
  img.width = H;
  img.height = S;
  const ctx = img.getContext("2d");
  const data = ctx.createImageData(H, S);
  let cells = 0;
  for (let s = 0; s < S; s++) {
    for (let k = 0; k < H; k++) {
      const m = miss[s * H + k];
      if (typeof m !== "number" || !Number.isFinite(m)) continue; // no value: left clear
      const [r, g, b] = heat((range[1] - logMiss(m)) / (range[1] - range[0]));
      const at = 4 * ((S - 1 - s) * H + k);
      data.data.set([r, g, b, 255], at);
      cells++;
    }
  }
  ctx.putImageData(data, 0, 0);
  const out = { img, cells };
  images.set(swarm, out);
  return out;
}

/** Linear axes over the cells' extent (each cell centred on its speed or heading). */
function swarmAxes(swarm, box) {
  const extent = ([lo, hi], n) => {
    const half = n > 1 ? (hi - lo) / (n - 1) / 2 : 0.5;
    return [lo - half, hi + half];
  };
  const [h0, h1] = extent(swarm.heading_range_deg, swarm.headings);
  const [s0, s1] = extent(swarm.speed_range, swarm.speeds);
  const wrap = (deg) => { // a heading outside the map's turn, brought into it when it fits
    for (const turn of [0, 360, -360]) if (deg + turn >= h0 && deg + turn <= h1) return deg + turn;
    return deg;
  };
  return {
    x: (deg) => box.x + ((wrap(deg) - h0) / (h1 - h0)) * box.w,
    y: (speed) => box.y + box.h - ((speed - s0) / (s1 - s0)) * box.h,
    inside: (p) => p.speed >= s0 && p.speed <= s1 && wrap(p.heading_deg) >= h0 && wrap(p.heading_deg) <= h1,
  };
}

/**
 * Draw the swarm `swarm` (orbit.swarm's answer) on `canvas`, with `final` (tang's polished
 * shot, {speed, heading_deg}, or null) marked. Sets data-cells (shots drawn) and data-best
 * (the best's CSS pixel) on the canvas, for tests.
 */
export function drawSwarm(canvas, swarm, final = null) {
  const { ctx, width, height } = fitCanvas(canvas);
  ctx.clearRect(0, 0, width, height);
  const range = missRange(swarm.miss);
  const box = { x: MARGIN.left, y: MARGIN.top, w: Math.max(10, width - MARGIN.left - MARGIN.right),
    h: Math.max(10, height - MARGIN.top - MARGIN.bottom) };
  const muted = cssColor(canvas, "--muted", "#5d6475");
  ctx.fillStyle = cssColor(canvas, "--line", "#e2e5ee"); // a shot without a value stays this
  ctx.fillRect(box.x, box.y, box.w, box.h);
  if (!range) {
    canvas.dataset.cells = "0";
    return;
  }
  const { img, cells } = cellImage(swarm, range);
  ctx.imageSmoothingEnabled = false; // one block per shot
  ctx.drawImage(img, box.x, box.y, box.w, box.h);
  const axes = swarmAxes(swarm, box);
  drawSwarmAxes(ctx, swarm, box, muted);
  drawColourBar(ctx, range, box, muted);
  // the refined candidates, tang's polished shot, then the best on top
  ctx.lineWidth = 1;
  for (const r of swarm.refined ?? []) {
    if (!axes.inside(r)) continue;
    ctx.fillStyle = "#ffffff";
    ctx.strokeStyle = "#1b1e28";
    ctx.beginPath();
    ctx.arc(axes.x(r.heading_deg), axes.y(r.speed), 2.5, 0, 2 * Math.PI);
    ctx.fill();
    ctx.stroke();
  }
  if (final && axes.inside(final)) { // under the best's ring: the polish starts there
    ctx.fillStyle = cssColor(canvas, "--accent", "#4f46e5");
    ctx.strokeStyle = "#ffffff";
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    ctx.arc(axes.x(final.heading_deg), axes.y(final.speed), 4, 0, 2 * Math.PI);
    ctx.fill();
    ctx.stroke();
  }
  canvas.dataset.cells = String(cells);
  if (!swarm.best) return;
  const clamp = (v, lo, span) => Math.min(Math.max(v, lo), lo + span); // refined past the grid
  const best = [clamp(axes.x(swarm.best.heading_deg), box.x, box.w),
    clamp(axes.y(swarm.best.speed), box.y, box.h)];
  ctx.strokeStyle = "#ffffff";
  ctx.lineWidth = 4;
  ring(ctx, best);
  ctx.strokeStyle = "#dc2626";
  ctx.lineWidth = 2;
  ring(ctx, best);
  canvas.dataset.best = best.map((v) => v.toFixed(1)).join(",");
}

/** The target's mark (a ring and a cross) at [x, y]. */
function ring(ctx, [x, y]) {
  ctx.beginPath();
  ctx.arc(x, y, 6, 0, 2 * Math.PI);
  cross(ctx, [x, y], 9);
  ctx.stroke();
}

/** Round values every `step` from lo to hi (both inside). */
function ticks(lo, hi, step) {
  const out = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + 1e-9; v += step) out.push(v);
  return out;
}

/** Speed up the left (every 1, or 0.5 on a narrow range), heading along the bottom (every
 * 90°, or 45°), each with its name. */
function drawSwarmAxes(ctx, swarm, box, muted) {
  const [s0, s1] = swarm.speed_range;
  const [h0, h1] = swarm.heading_range_deg;
  const axes = swarmAxes(swarm, box);
  ctx.fillStyle = muted;
  ctx.strokeStyle = muted;
  ctx.lineWidth = 1;
  ctx.font = "11px system-ui, sans-serif";
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  ctx.beginPath();
  for (const s of ticks(s0, s1, s1 - s0 > 1.5 ? 1 : 0.5)) {
    ctx.moveTo(box.x - 3, axes.y(s));
    ctx.lineTo(box.x, axes.y(s));
    ctx.fillText(fmt(s, 2), box.x - 5, axes.y(s));
  }
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const d of ticks(h0, h1, h1 - h0 > 180 ? 90 : 45)) {
    ctx.moveTo(axes.x(d), box.y + box.h);
    ctx.lineTo(axes.x(d), box.y + box.h + 3);
    ctx.fillText(`${fmt(d, 3)}°`, axes.x(d), box.y + box.h + 4);
  }
  ctx.stroke();
  ctx.save();
  ctx.translate(10, box.y + box.h / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = "center";
  ctx.fillText("speed", 0, 0);
  ctx.restore();
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  ctx.fillText("heading", box.x + box.w / 2, box.y + box.h + 18);
}

/** The legend: a bar from the smallest miss (top, bright) to the largest, its decades. */
function drawColourBar(ctx, [lo, hi], box, muted) {
  const x = box.x + box.w + 10;
  const bar = ctx.createLinearGradient(0, box.y, 0, box.y + box.h);
  for (let i = 0; i <= 8; i++) bar.addColorStop(i / 8, `rgb(${heat(1 - i / 8).join(",")})`);
  ctx.fillStyle = bar;
  ctx.fillRect(x, box.y, 10, box.h);
  const y = (l) => box.y + ((l - lo) / (hi - lo)) * box.h;
  const first = Math.ceil(lo);
  const last = Math.floor(hi);
  const every = Math.max(1, Math.ceil((last - first + 1) / 4)); // at most about 4 labels
  const labels = [];
  for (let k = last; k >= first; k -= every) labels.push([k, k === 0 ? "1" : `1e${k}`]);
  if (labels.length < 2) labels.splice(0, 1, [lo, fmt(10 ** lo, 2)], [hi, fmt(10 ** hi, 2)]); // ends
  ctx.fillStyle = muted;
  ctx.font = "10px system-ui, sans-serif";
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  for (const [l, text] of labels) ctx.fillText(text.replace("-", "−"), x + 14, y(l));
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  ctx.fillText("miss", x + 5, box.y + box.h + 17);
}
