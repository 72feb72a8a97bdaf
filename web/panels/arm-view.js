// The robot arm card's DOM and drawing (./arm.js is its controller): the canvas, the
// readouts, the desktop command, and one frame of the scene in the worker's last pose.
import { readouts } from "../lib/card.js";
import { cross, cssColor, disc, fitCanvas } from "../lib/canvas.js";
import { commandLine } from "../lib/command.js";
import { h } from "../lib/dom.js";

const OBJECT_MM = 16; // a falling object's radius

/** Build the card in `el`; returns {canvas, command, show(readout, text)}. */
export function armView(el, firstCommand) {
  const canvas = h("canvas", {
    className: "arm-canvas", role: "img", tabIndex: 0,
    "aria-label": "A two-link robot arm, waiting for Python.",
  });
  const { list, show } = readouts([
    ["Mode / score", "mode"], ["Shoulder / elbow", "angles"], ["Hand error", "error"],
  ]);
  const command = commandLine(firstCommand);
  el.append(
    h("p", { className: "demo-what" }, "Each frame tang pushes the arm's forward kinematics " +
      "through one dual number with two tangents — the exact Jacobian — and damped least " +
      "squares moves both joints, within their limits, toward your pointer."),
    canvas, list, command,
  );
  return { canvas, command, show };
}

/**
 * Draw one frame: the reachable region, the pick-and-place spots and block, the falling
 * objects, the target cross and the arm. `view` is web/lib/world.js's mapping (mm ↔ px);
 * `s` holds {frame, blockAt, objects, goal, caughtFlash}, `scene` is robot_arm.scene;
 * describeArm says the same in words.
 */
export function drawArm(canvas, view, scene, s) {
  const { ctx, width, height } = fitCanvas(canvas);
  view.fit(width, height);
  const { toPx, k } = view;
  const muted = cssColor(canvas, "--muted", "#5d6475");
  const line = cssColor(canvas, "--line", "#e2e5ee");
  ctx.clearRect(0, 0, width, height);

  // the reachable region
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  for (const p of scene.outline) ctx.lineTo(...toPx(p));
  ctx.closePath();
  ctx.fillStyle = line;
  ctx.globalAlpha = 0.45;
  ctx.fill();
  ctx.globalAlpha = 1;
  ctx.strokeStyle = line;
  ctx.stroke();

  // pick-and-place spots and the block
  for (const spot of scene.spots_mm) {
    const [px, py] = toPx(spot);
    ctx.strokeStyle = muted;
    ctx.setLineDash([3, 3]);
    ctx.strokeRect(px - 14, py - 14, 28, 28);
    ctx.setLineDash([]);
  }
  const [bx, by] = toPx(s.blockAt);
  ctx.fillStyle = "#d97706";
  ctx.fillRect(bx - 10, by - 10, 20, 20);

  // falling objects
  ctx.fillStyle = "#0891b2";
  for (const o of s.objects) disc(ctx, toPx([o.x, o.y]), OBJECT_MM * k);

  // the pointer's target
  if (s.goal) {
    ctx.strokeStyle = muted;
    ctx.beginPath();
    cross(ctx, toPx(s.goal), 7);
    ctx.stroke();
  }
  drawLinks(canvas, ctx, view, scene, s);
}

/** The canvas's text alternative, from the state drawArm draws (`s`: an ArmGame): the pose,
 * the target cross, the block, the falling objects (only when there are some), the score. */
export function describeArm(s) {
  const mm = ([x, y]) => `(${Math.round(x)}, ${Math.round(y)}) mm`;
  const { frame, goal, mode } = s;
  const how = {
    follow: "its hand follows the pointer",
    keyboard: "the arrow keys move its target (Escape lets go)",
    "pick-place": "left alone, it carries the orange block between the two dashed squares",
  }[mode];
  const parts = [`A two-link robot arm: ${how}.`];
  if (frame) {
    parts.push(`Shoulder ${Math.round(frame.shoulder_deg)}°, elbow ${Math.round(frame.elbow_deg)}°, ` +
      `hand at ${mm(frame.hand)}.`);
  }
  if (goal && frame) {
    const miss = frame.hand_error_mm < 1 ? "on it" : `${Math.round(frame.hand_error_mm)} mm from it`;
    parts.push(`Target ${mm(goal)}${frame.reachable ? "" : ", out of reach"}: the hand is ${miss}.`);
  }
  if (mode !== "pick-place") parts.push(`The orange block rests at ${mm(s.blockAt)}.`);
  const n = s.objects.length;
  if (n) parts.push(`${n} falling object${n === 1 ? "" : "s"}: touch one with the hand to score.`);
  if (s.counts.score) parts.push(`Score ${s.counts.score}.`);
  if (mode === "pick-place") parts.push("Move the pointer over it, or focus it and press an arrow key, to steer.");
  return parts.join(" ");
}

/** The arm: shoulder → elbow → hand, in the worker's last pose. */
function drawLinks(canvas, ctx, { toPx, k }, scene, { frame, caughtFlash }) {
  const shoulder = toPx([0, 0]);
  const elbow = toPx(frame ? frame.elbow : [0, scene.upper_mm]);
  const hand = frame ? toPx(frame.hand) : elbow;
  ctx.lineCap = "round";
  ctx.strokeStyle = caughtFlash > 0 ? "#15803d" : cssColor(canvas, "--accent", "#4f46e5");
  ctx.lineWidth = Math.max(6, 22 * k);
  ctx.beginPath();
  ctx.moveTo(...shoulder);
  ctx.lineTo(...elbow);
  ctx.lineTo(...hand);
  ctx.stroke();
  ctx.fillStyle = cssColor(canvas, "--fg", "#1b1e28");
  for (const joint of [shoulder, elbow]) disc(ctx, joint, Math.max(3, 9 * k));
  ctx.fillStyle = "#d97706";
  disc(ctx, hand, Math.max(4, 12 * k));
}
