// Same idea, every scale · 2. A robot arm: the hand follows the pointer. Every animation frame
// asks the worker for one inverse-kinematics solve from the current pose (robot_arm.solve: damped
// least squares, each Jacobian from one dual pass); a frame whose solve is still running is
// dropped, never queued. Objects fall: touching one with the hand scores. Left alone for a
// few seconds the arm runs a pick-and-place loop (robot_arm.pick_place). Pauses off-screen.
import { commandLine, setCommand } from "../lib/command.js";
import { cssColor, fitCanvas, onResize } from "../lib/canvas.js";
import { h } from "../lib/dom.js";
import { fmt } from "../lib/format.js";
import { animate } from "../lib/loop.js";

const IDLE_MS = 3000; // no pointer for this long: pick and place
const MARGIN_MM = 30; // around the workspace in the view
const DROP_EVERY_S = 1.1; // a new falling object
const FALL_MM_S = 150;
const CATCH_MM = 34; // hand within this of an object: caught
const OBJECT_MM = 16;
const HOLD_MM = 5; // the hand carries the block once this close to the path

const cliFor = ([x, y]) => `python -m demos.robot_arm --target ${Math.round(x)},${Math.round(y)} --json`;

export default {
  id: "arm",
  title: "A robot arm",
  section: "scale",
  async mount(el, { call, ready }) {
    const canvas = h("canvas", {
      className: "arm-canvas", role: "img", tabIndex: 0,
      "aria-label": "A two-link robot arm; its hand follows the pointer (or the arrow keys). " +
        "Falling objects score when the hand touches them.",
    });
    const out = (name) => h("dd", { dataset: { readout: name } }, "…");
    const readouts = h("dl", { className: "readouts" },
      h("dt", {}, "Mode / score"), out("mode"),
      h("dt", {}, "Shoulder / elbow"), out("angles"),
      h("dt", {}, "Hand error"), out("error"));
    const command = commandLine(cliFor([300, 120]));
    el.append(
      h("p", { className: "demo-what" }, "Each frame tang pushes the arm's forward kinematics " +
        "through one dual number with two tangents — the exact Jacobian — and damped least " +
        "squares moves both joints, within their limits, toward your pointer."),
      canvas, readouts, command,
    );
    const show = (name, text) => (el.querySelector(`[data-readout="${name}"]`).textContent = text);
    el.dataset.state = "loading";

    try {
      await ready;
    } catch {
      el.dataset.state = "error";
      show("mode", "Python did not start, so the arm cannot move.");
      return;
    }
    const scene = await call("robot_arm.scene");

    // the view: millimetres (y up) ↔ CSS pixels, fitted to the workspace and the canvas
    const xs = scene.outline.map((p) => p[0]);
    const ys = scene.outline.map((p) => p[1]);
    const box = {
      x0: Math.min(...xs) - MARGIN_MM, x1: Math.max(...xs) + MARGIN_MM,
      y0: Math.min(...ys) - MARGIN_MM, y1: Math.max(...ys) + MARGIN_MM,
    };
    let view = { k: 1, ox: 0, oy: 0 };
    const toPx = ([x, y]) => [view.ox + x * view.k, view.oy - y * view.k];
    const toMm = (px, py) => [(px - view.ox) / view.k, (view.oy - py) / view.k];
    function fitView(width, height) {
      const k = Math.min(width / (box.x1 - box.x0), height / (box.y1 - box.y0));
      const ox = (width - k * (box.x1 + box.x0)) / 2;
      const oy = (height + k * (box.y1 + box.y0)) / 2;
      view = { k, ox, oy };
      canvas.dataset.view = JSON.stringify(view); // for tests: mm → px inside the canvas
    }

    // state: the pose is the worker's last answer; the page never computes kinematics itself
    let frame = scene.rest; // last solve: {shoulder_deg, elbow_deg, elbow, hand, hand_error_mm, …}
    let pose = scene.rest_pose_deg;
    let target = null; // follow mode: the pointer in mm
    let settled = false; // the last solve changed nothing for this target: no need to ask again
    let lastPointer = performance.now(); // the card starts in follow mode, at rest
    let mode = "follow";
    let placeT = 0; // seconds into the pick-and-place loop
    let blockSpot = 0; // the spot the block rests at when not carried
    let blockAt = scene.spots_mm[0];
    let inFlight = false;
    let solves = 0;
    let dropped = 0;
    let score = 0;
    let objects = []; // falling: {x, y}
    let sinceDrop = 0;
    let caughtFlash = 0;

    function pointerAt(ev) {
      const rect = canvas.getBoundingClientRect();
      aim(toMm(ev.clientX - rect.left, ev.clientY - rect.top));
    }
    function aim(mm) {
      target = mm;
      settled = false;
      lastPointer = performance.now();
      if (mode !== "follow") {
        mode = "follow";
        blockAt = scene.spots_mm[blockSpot]; // an interrupted carry: the block goes back
      }
    }
    canvas.addEventListener("pointerdown", (ev) => {
      canvas.setPointerCapture(ev.pointerId);
      pointerAt(ev);
    });
    canvas.addEventListener("pointermove", pointerAt);
    // the keyboard moves the target too: arrows by 10 mm (Shift: 50 mm)
    const KEYS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, 1], ArrowDown: [0, -1] };
    canvas.addEventListener("keydown", (ev) => {
      const dir = KEYS[ev.key];
      if (!dir) return;
      ev.preventDefault();
      const step = ev.shiftKey ? 50 : 10;
      const from = target ?? frame.hand;
      aim([from[0] + dir[0] * step, from[1] + dir[1] * step]);
    });

    function request() {
      if (inFlight) {
        dropped++; // the last frame's solve is still running: skip, never queue
        return;
      }
      inFlight = true;
      const carrying = mode === "pick-place";
      const sentPose = pose;
      const pending = carrying
        ? call("robot_arm.pick_place", { t: placeT, pose })
        : call("robot_arm.solve", { target, pose });
      pending.then((r) => {
        solves++;
        frame = r;
        pose = [r.shoulder_deg, r.elbow_deg];
        const still = Math.abs(pose[0] - sentPose[0]) + Math.abs(pose[1] - sentPose[1]) < 1e-9;
        if (!carrying && still && target && r.target[0] === target[0] && r.target[1] === target[1]) {
          settled = true;
        }
        if (carrying && mode === "pick-place") {
          if (r.carrying && r.hand_error_mm < HOLD_MM) blockAt = r.hand;
          if (r.phase === "release" && r.hand_error_mm < HOLD_MM) {
            blockSpot = 1 - r.from_spot;
            blockAt = scene.spots_mm[blockSpot];
          }
        }
        el.dataset.state = "running";
        el.dataset.mode = mode;
        el.dataset.handError = String(r.hand_error_mm);
        el.dataset.hand = r.hand.map((v) => v.toFixed(3)).join(",");
        el.dataset.solves = String(solves);
        el.dataset.dropped = String(dropped);
        el.dataset.solveMs = r.solve_ms.toFixed(3);
        el.dataset.phase = r.phase ?? "";
        readout();
      }, (err) => {
        if (err.type !== "Cancelled") {
          el.dataset.state = "error";
          show("mode", `The worker failed: ${err.message}`);
        }
      }).finally(() => {
        inFlight = false;
      });
    }

    function readout() {
      const label = mode === "follow" ? "Follow the pointer" : "Pick and place (idle)";
      show("mode", `${label} · score ${score}`);
      if (frame) {
        show("angles", `${frame.shoulder_deg.toFixed(1)}° / ${frame.elbow_deg.toFixed(1)}°`);
        const reach = frame.reachable ? "" : " (out of reach: nearest pose)";
        show("error", `${fmt(frame.hand_error_mm, 3)} mm${reach}`);
        if (mode === "follow") setCommand(command, cliFor(frame.target));
      }
    }

    function step(_t, dt) {
      const now = performance.now();
      if (mode === "follow" && now - lastPointer > IDLE_MS) {
        mode = "pick-place";
        placeT = blockSpot * (scene.cycle_s / 2); // start the loop where the block lies
        objects = [];
      }
      if (mode === "pick-place") placeT += dt;
      else {
        sinceDrop += dt;
        if (sinceDrop > DROP_EVERY_S) {
          sinceDrop = 0;
          objects.push({ x: box.x0 + 40 + Math.random() * (box.x1 - box.x0 - 80), y: box.y1 });
        }
        const hand = frame?.hand;
        objects = objects.filter((o) => {
          o.y -= FALL_MM_S * dt;
          if (hand && Math.hypot(o.x - hand[0], o.y - hand[1]) < CATCH_MM) {
            score++;
            caughtFlash = 0.3;
            el.dataset.score = String(score);
            return false;
          }
          return o.y > box.y0;
        });
      }
      caughtFlash = Math.max(0, caughtFlash - dt);
      if (mode === "pick-place" || (target && !settled)) request();
      draw();
    }

    function draw() {
      const { ctx, width, height } = fitCanvas(canvas);
      fitView(width, height);
      const fg = cssColor(canvas, "--fg", "#1b1e28");
      const muted = cssColor(canvas, "--muted", "#5d6475");
      const line = cssColor(canvas, "--line", "#e2e5ee");
      const accent = cssColor(canvas, "--accent", "#4f46e5");
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
      for (const s of scene.spots_mm) {
        const [px, py] = toPx(s);
        ctx.strokeStyle = muted;
        ctx.setLineDash([3, 3]);
        ctx.strokeRect(px - 14, py - 14, 28, 28);
        ctx.setLineDash([]);
      }
      const [bx, by] = toPx(blockAt);
      ctx.fillStyle = "#d97706";
      ctx.fillRect(bx - 10, by - 10, 20, 20);

      // falling objects
      ctx.fillStyle = "#0891b2";
      for (const o of objects) {
        const [px, py] = toPx([o.x, o.y]);
        ctx.beginPath();
        ctx.arc(px, py, OBJECT_MM * view.k, 0, 2 * Math.PI);
        ctx.fill();
      }

      // the pointer's target
      const goal = mode === "follow" ? target : frame?.target;
      if (goal) {
        const [tx, ty] = toPx(goal);
        ctx.strokeStyle = muted;
        ctx.beginPath();
        ctx.moveTo(tx - 7, ty);
        ctx.lineTo(tx + 7, ty);
        ctx.moveTo(tx, ty - 7);
        ctx.lineTo(tx, ty + 7);
        ctx.stroke();
      }

      // the arm: shoulder → elbow → hand, in the worker's last pose
      const shoulder = toPx([0, 0]);
      const elbow = toPx(frame ? frame.elbow : [0, scene.upper_mm]);
      const hand = frame ? toPx(frame.hand) : elbow;
      ctx.lineCap = "round";
      ctx.strokeStyle = caughtFlash > 0 ? "#15803d" : accent;
      ctx.lineWidth = Math.max(6, 22 * view.k);
      ctx.beginPath();
      ctx.moveTo(...shoulder);
      ctx.lineTo(...elbow);
      ctx.lineTo(...hand);
      ctx.stroke();
      ctx.fillStyle = fg;
      for (const [px, py] of [shoulder, elbow]) {
        ctx.beginPath();
        ctx.arc(px, py, Math.max(3, 9 * view.k), 0, 2 * Math.PI);
        ctx.fill();
      }
      ctx.fillStyle = "#d97706";
      ctx.beginPath();
      ctx.arc(...hand, Math.max(4, 12 * view.k), 0, 2 * Math.PI);
      ctx.fill();
    }

    onResize(canvas, draw);
    animate(canvas, step);
    readout();
  },
};
