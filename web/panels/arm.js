// Same idea, every scale · 2. A robot arm: the hand follows the pointer. Every animation frame
// asks the worker for one inverse-kinematics solve from the current pose (robot_arm.solve: damped
// least squares, each Jacobian from one dual pass); a frame whose solve is still running is
// dropped, never queued. Objects fall: touching one with the hand scores. Left alone for a
// few seconds the arm runs a pick-and-place loop (robot_arm.pick_place). Pauses off-screen.
// ./arm-view.js builds the card and draws it; this file is the controller.
import { pythonStarted } from "../lib/card.js";
import { onResize } from "../lib/canvas.js";
import { setCommand } from "../lib/command.js";
import { fmt } from "../lib/format.js";
import { animate } from "../lib/loop.js";
import { keepTouchesNear, worldView } from "../lib/world.js";
import { armView, drawArm } from "./arm-view.js";

const IDLE_MS = 3000; // no pointer for this long: pick and place
const MARGIN_MM = 30; // around the workspace in the view
const DROP_EVERY_S = 1.1; // a new falling object
const FALL_MM_S = 150;
const CATCH_MM = 34; // hand within this of an object: caught
const HOLD_MM = 5; // the hand carries the block once this close to the path
// the keyboard moves the target too: arrows by 10 mm (Shift: 50 mm)
const KEYS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, 1], ArrowDown: [0, -1] };

const cliFor = ([x, y]) => `python -m demos.robot_arm --target ${Math.round(x)},${Math.round(y)} --json`;

export default {
  id: "arm",
  title: "A robot arm",
  section: "scale",
  async mount(el, { call, ready }) {
    const { canvas, command, show } = armView(el, cliFor([300, 120]));
    el.dataset.state = "loading";
    const failed = () => show("mode", "Python did not start, so the arm cannot move.");
    if (!(await pythonStarted(ready, el, failed))) return;
    const scene = await call("robot_arm.scene");

    // the view: millimetres (y up) ↔ CSS pixels, fitted to the workspace and the canvas
    const xs = scene.outline.map((p) => p[0]);
    const ys = scene.outline.map((p) => p[1]);
    const box = [Math.min(...xs) - MARGIN_MM, Math.max(...xs) + MARGIN_MM,
      Math.min(...ys) - MARGIN_MM, Math.max(...ys) + MARGIN_MM];
    const view = worldView(canvas, box);
    const game = new ArmGame(scene, box, { el, show, command, call });

    canvas.addEventListener("pointerdown", (ev) => {
      canvas.setPointerCapture(ev.pointerId);
      game.aim(view.fromEvent(ev));
    });
    canvas.addEventListener("pointermove", (ev) => game.aim(view.fromEvent(ev)));
    keepTouchesNear(canvas, view, () => game.frame?.hand); // a finger on the hand drags it
    canvas.addEventListener("keydown", (ev) => {
      const dir = KEYS[ev.key];
      if (!dir) return;
      ev.preventDefault();
      const step = ev.shiftKey ? 50 : 10;
      const from = game.target ?? game.frame.hand;
      game.aim([from[0] + dir[0] * step, from[1] + dir[1] * step]);
    });

    const draw = () => drawArm(canvas, view, scene, game);
    onResize(canvas, draw);
    animate(canvas, (_t, dt) => {
      game.step(dt);
      draw();
    });
    game.readout();
  },
};

/** The card's state and rules. The pose is the worker's last answer: the page never computes
 * kinematics itself. Results go to the card's readouts and data-* attributes (for tests). */
class ArmGame {
  constructor(scene, [x0, x1, y0, y1], ui) {
    this.scene = scene;
    this.box = { x0, x1, y0, y1 };
    this.ui = ui;
    this.frame = scene.rest; // last solve: {shoulder_deg, elbow_deg, elbow, hand, hand_error_mm, …}
    this.pose = scene.rest_pose_deg;
    this.target = null; // follow mode: the pointer in mm
    this.settled = false; // the last solve changed nothing for this target: no need to ask again
    this.lastPointer = performance.now(); // the card starts in follow mode, at rest
    this.mode = "follow";
    this.placeT = 0; // seconds into the pick-and-place loop
    this.blockSpot = 0; // the spot the block rests at when not carried
    this.blockAt = scene.spots_mm[0];
    this.inFlight = false;
    this.counts = { solves: 0, dropped: 0, score: 0 };
    this.objects = []; // falling: {x, y}
    this.sinceDrop = 0;
    this.caughtFlash = 0;
  }

  /** Where the cross is drawn: the pointer's target, or the pick-and-place path's. */
  get goal() {
    return this.mode === "follow" ? this.target : this.frame?.target;
  }

  /** Follow `mm`; an interrupted carry puts the block back where it was. */
  aim(mm) {
    this.target = mm;
    this.settled = false;
    this.lastPointer = performance.now();
    if (this.mode !== "follow") {
      this.mode = "follow";
      this.blockAt = this.scene.spots_mm[this.blockSpot];
    }
  }

  /** One animation frame: idle → pick and place; objects fall and score; ask for a solve. */
  step(dt) {
    const { box, counts } = this;
    if (this.mode === "follow" && performance.now() - this.lastPointer > IDLE_MS) {
      this.mode = "pick-place";
      this.placeT = this.blockSpot * (this.scene.cycle_s / 2); // start where the block lies
      this.objects = [];
    }
    if (this.mode === "pick-place") this.placeT += dt;
    else {
      this.sinceDrop += dt;
      if (this.sinceDrop > DROP_EVERY_S) {
        this.sinceDrop = 0;
        this.objects.push({ x: box.x0 + 40 + Math.random() * (box.x1 - box.x0 - 80), y: box.y1 });
      }
      const hand = this.frame?.hand;
      this.objects = this.objects.filter((o) => {
        o.y -= FALL_MM_S * dt;
        if (hand && Math.hypot(o.x - hand[0], o.y - hand[1]) < CATCH_MM) {
          counts.score++;
          this.caughtFlash = 0.3;
          this.ui.el.dataset.score = String(counts.score);
          return false;
        }
        return o.y > box.y0;
      });
    }
    this.caughtFlash = Math.max(0, this.caughtFlash - dt);
    if (this.mode === "pick-place" || (this.target && !this.settled)) this.request();
  }

  /** One solve from the current pose; while one is running, this frame's is dropped. */
  request() {
    if (this.inFlight) {
      this.counts.dropped++; // never queue
      return;
    }
    this.inFlight = true;
    const carrying = this.mode === "pick-place";
    const sentPose = this.pose;
    const { call, el, show } = this.ui;
    const pending = carrying
      ? call("robot_arm.pick_place", { t: this.placeT, pose: sentPose })
      : call("robot_arm.solve", { target: this.target, pose: sentPose });
    pending.then((r) => this.solved(r, carrying, sentPose), (err) => {
      if (err.type !== "Cancelled") {
        el.dataset.state = "error";
        show("mode", `The worker failed: ${err.message}`);
      }
    }).finally(() => {
      this.inFlight = false;
    });
  }

  solved(r, carrying, sentPose) {
    const { el } = this.ui;
    this.counts.solves++;
    this.frame = r;
    this.pose = [r.shoulder_deg, r.elbow_deg];
    const still = Math.abs(this.pose[0] - sentPose[0]) + Math.abs(this.pose[1] - sentPose[1]) < 1e-9;
    const t = this.target;
    if (!carrying && still && t && r.target[0] === t[0] && r.target[1] === t[1]) this.settled = true;
    if (carrying && this.mode === "pick-place") {
      if (r.carrying && r.hand_error_mm < HOLD_MM) this.blockAt = r.hand;
      if (r.phase === "release" && r.hand_error_mm < HOLD_MM) {
        this.blockSpot = 1 - r.from_spot;
        this.blockAt = this.scene.spots_mm[this.blockSpot];
      }
    }
    Object.assign(el.dataset, {
      state: "running", mode: this.mode, handError: String(r.hand_error_mm),
      hand: r.hand.map((v) => v.toFixed(3)).join(","), solves: String(this.counts.solves),
      dropped: String(this.counts.dropped), solveMs: r.solve_ms.toFixed(3), phase: r.phase ?? "",
    });
    this.readout();
  }

  readout() {
    const { show, command } = this.ui;
    const { frame, mode } = this;
    const label = mode === "follow" ? "Follow the pointer" : "Pick and place (idle)";
    show("mode", `${label} · score ${this.counts.score}`);
    if (frame) {
      show("angles", `${frame.shoulder_deg.toFixed(1)}° / ${frame.elbow_deg.toFixed(1)}°`);
      const reach = frame.reachable ? "" : " (out of reach: nearest pose)";
      show("error", `${fmt(frame.hand_error_mm, 3)} mm${reach}`);
      if (mode === "follow") setCommand(command, cliFor(frame.target));
    }
  }
}
