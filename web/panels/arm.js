// Same idea, every scale · 2. A robot arm: the hand follows the pointer. Every animation frame
// asks the worker for one inverse-kinematics solve from the current pose (robot_arm.solve: damped
// least squares, each Jacobian from one dual pass); a frame whose solve is still running is
// dropped, never queued. While the pointer or the arrow keys steer it, objects fall: touching
// one with the hand scores. The arrow keys steer until Escape or focus leaves the canvas; the
// pointer, until it rests for a few seconds. Left alone the arm runs a pick-and-place loop
// (robot_arm.pick_place). The command always names the solve being run. Pauses off-screen.
// ./arm-view.js builds the card and draws it; this file is the controller.
import { pythonStarted } from "../lib/card.js";
import { onResize } from "../lib/canvas.js";
import { setCommand } from "../lib/command.js";
import { fmt } from "../lib/format.js";
import { animate } from "../lib/loop.js";
import { keepTouchesNear, worldView } from "../lib/world.js";
import { armView, describeArm, drawArm } from "./arm-view.js";

const IDLE_MS = 3000; // the pointer resting this long: pick and place
const MARGIN_MM = 30; // around the workspace in the view
const DROP_EVERY_S = 1.1; // a new falling object
const FALL_MM_S = 150;
const CATCH_MM = 34; // hand within this of an object: caught
const HOLD_MM = 5; // the hand carries the block once this close to the path
// the keyboard moves the target too: arrows by 10 mm (Shift: 50 mm)
const KEYS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, 1], ArrowDown: [0, -1] };
const MODE_LABELS = {
  follow: "Follow the pointer", keyboard: "Arrow keys (Escape: let go)", "pick-place": "Pick and place (idle)",
};

const CLI = "python -m demos.robot_arm";
// what the worker is asked, and the desktop command that asks the same: targets are whole
// millimetres and the loop's clock whole hundredths of a second, so both print exactly
const solveCall = (target) => ({
  method: "robot_arm.solve", params: { target }, command: `${CLI} --target ${target.join(",")} --json`,
});
const loopCall = (t) => ({
  method: "robot_arm.pick_place", params: { t }, command: `${CLI} --pick-place ${t.toFixed(2)} --json`,
});
const wholeMm = ([x, y]) => [Math.round(x), Math.round(y)];

export default {
  id: "arm",
  title: "A robot arm",
  section: "scale",
  async mount(el, { call, ready }) {
    const { canvas, command, show } = armView(el, solveCall([300, 120]).command);
    el.dataset.state = "loading";
    const failed = () => {
      show("mode", "Python did not start, so the arm cannot move.");
      canvas.setAttribute("aria-label", "A two-link robot arm that cannot move: Python did not start.");
    };
    if (!(await pythonStarted(ready, el, failed))) return;
    const scene = await call("robot_arm.scene");

    // the view: millimetres (y up) ↔ CSS pixels, fitted to the workspace and the canvas
    const xs = scene.outline.map((p) => p[0]);
    const ys = scene.outline.map((p) => p[1]);
    const box = [Math.min(...xs) - MARGIN_MM, Math.max(...xs) + MARGIN_MM,
      Math.min(...ys) - MARGIN_MM, Math.max(...ys) + MARGIN_MM];
    const view = worldView(canvas, box);
    const game = new ArmGame(scene, box, { el, show, command, call, canvas });

    canvas.addEventListener("pointerdown", (ev) => {
      canvas.setPointerCapture(ev.pointerId);
      game.aim(view.fromEvent(ev), "follow");
    });
    canvas.addEventListener("pointermove", (ev) => game.aim(view.fromEvent(ev), "follow"));
    keepTouchesNear(canvas, view, () => game.frame?.hand); // a finger on the hand drags it
    canvas.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && game.mode === "keyboard") game.rest();
      const dir = KEYS[ev.key];
      if (!dir) return;
      ev.preventDefault();
      const step = ev.shiftKey ? 50 : 10;
      const from = game.mode === "pick-place" || !game.target ? wholeMm(game.frame.hand) : game.target;
      game.aim([from[0] + dir[0] * step, from[1] + dir[1] * step], "keyboard");
    });
    canvas.addEventListener("blur", () => game.mode === "keyboard" && game.rest());

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
 * kinematics itself. Results go to the card's readouts and data-* attributes (for tests).
 * Modes: "follow" (the pointer), "keyboard" (the arrow keys) and "pick-place" (left alone). */
class ArmGame {
  constructor(scene, [x0, x1, y0, y1], ui) {
    this.scene = scene;
    this.box = { x0, x1, y0, y1 };
    this.ui = ui;
    this.frame = scene.rest; // last solve: {shoulder_deg, elbow_deg, elbow, hand, hand_error_mm, …}
    this.pose = scene.rest_pose_deg;
    this.target = null; // follow and keyboard modes: the target in whole mm
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
    this.command = null; // the command shown: the last call asked
  }

  /** Where the cross is drawn: the target being steered to, or the pick-and-place path's. */
  get goal() {
    return this.mode === "pick-place" ? this.frame?.target : this.target;
  }

  /** Steer to `mm` (snapped to whole mm) in `mode` ("follow" or "keyboard"); an interrupted
   * carry puts the block back where it was. */
  aim(mm, mode) {
    this.target = wholeMm(mm);
    this.settled = false;
    this.lastPointer = performance.now();
    if (this.mode === "pick-place") this.blockAt = this.scene.spots_mm[this.blockSpot];
    this.mode = mode;
    this.readout();
  }

  /** Left alone: the pick-and-place loop, from where the block lies; nothing falls. */
  rest() {
    this.mode = "pick-place";
    this.placeT = this.blockSpot * (this.scene.cycle_s / 2);
    this.objects = [];
    this.readout();
  }

  /** One animation frame: an idle pointer → pick and place; objects fall and score while
   * steered; ask for a solve. The keyboard steers until it is left (Escape, blur). */
  step(dt) {
    if (this.mode === "follow" && performance.now() - this.lastPointer > IDLE_MS) this.rest();
    if (this.mode === "pick-place") this.placeT += dt;
    else this.fall(dt);
    this.caughtFlash = Math.max(0, this.caughtFlash - dt);
    if (this.mode === "pick-place" || (this.target && !this.settled)) this.request();
    this.describe();
  }

  fall(dt) {
    const { box, counts } = this;
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

  /** One solve from the current pose; while one is running, this frame's is dropped. The
   * command shows the call being made, so it always names what runs. */
  request() {
    if (this.inFlight) {
      this.counts.dropped++; // never queue
      return;
    }
    this.inFlight = true;
    const carrying = this.mode === "pick-place";
    const sentPose = this.pose;
    const ask = carrying ? loopCall(Math.round(this.placeT * 100) / 100) : solveCall(this.target);
    const { call, el, show, command } = this.ui;
    if (this.command !== ask.command) {
      this.command = ask.command;
      setCommand(command, ask.command);
    }
    call(ask.method, { ...ask.params, pose: sentPose }).then((r) => this.solved(r, carrying, sentPose), (err) => {
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
      state: "running", handError: String(r.hand_error_mm),
      hand: r.hand.map((v) => v.toFixed(3)).join(","), solves: String(this.counts.solves),
      dropped: String(this.counts.dropped), solveMs: r.solve_ms.toFixed(3), phase: r.phase ?? "",
    });
    this.readout();
  }

  /** The readouts, data-mode, and the canvas's text alternative from the drawn state. */
  readout() {
    const { show, el } = this.ui;
    const { frame, mode } = this;
    el.dataset.mode = mode;
    show("mode", `${MODE_LABELS[mode]} · score ${this.counts.score}`);
    if (frame) {
      show("angles", `${frame.shoulder_deg.toFixed(1)}° / ${frame.elbow_deg.toFixed(1)}°`);
      const reach = frame.reachable ? "" : " (out of reach: nearest pose)";
      show("error", `${fmt(frame.hand_error_mm, 3)} mm${reach}`);
    }
    this.describe();
  }

  /** The canvas's text alternative, rebuilt from what is drawn (set only when it changes). */
  describe() {
    const { canvas, el } = this.ui;
    el.dataset.objects = String(this.objects.length);
    const label = describeArm(this);
    if (canvas.getAttribute("aria-label") !== label) canvas.setAttribute("aria-label", label);
  }
}
