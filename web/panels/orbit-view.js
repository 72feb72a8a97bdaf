// The orbit card's DOM and drawing (./orbit.js is its controller): the canvas, the buttons,
// the readouts, the desktop command, and one frame: bodies, target, shots, tang's iterates.
import { readouts } from "../lib/card.js";
import { cross, cssColor, disc, fitCanvas } from "../lib/canvas.js";
import { commandLine } from "../lib/command.js";
import { h } from "../lib/dom.js";

export const FLY_S = 1.2; // how long a shot's flight takes to draw
const SHOT_COLORS = ["#0891b2", "#d97706", "#db2777"];

/** Build the card in `el`; returns {canvas, tryButton, stopButton, againButton, command,
 * show(readout, text)}. */
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
    ["Status", "status"], ["Your best miss", "best"], ["tang's miss", "tang"],
  ]);
  const command = commandLine("python -m demos.orbit --speed 1 --heading 90 --optimize 30");
  el.append(
    h("p", { className: "demo-what" }, "tang differentiates the miss through all 1,600 " +
      "steps of the flight with one dual number carrying two tangents (speed and heading), " +
      "and walks downhill."),
    canvas,
    h("div", { className: "orbit-buttons" }, tryButton, stopButton, againButton),
    list, command,
  );
  return { canvas, tryButton, stopButton, againButton, command, show };
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
