// Same idea, every scale · 3. An orbit: drag from the launch pad to fling a probe among the
// planet and its moon (direction = heading, length = speed); three shots, the best miss kept.
// Then "Let tang try": from your best shot the worker runs gradient descent on (speed,
// heading), one iterate per call (orbit.optimize), each gradient from one dual pass through
// all 1,600 leapfrog steps; every iterate's path is drawn faintly, the last one boldly.
// The flight animation pauses off-screen; so does the optimiser, between two iterates.
// ./orbit-view.js builds the card and draws it; this file is the controller.
import { pythonStarted } from "../lib/card.js";
import { onResize } from "../lib/canvas.js";
import { setCommand } from "../lib/command.js";
import { fmt } from "../lib/format.js";
import { animate, runChunks, whenVisible } from "../lib/loop.js";
import { keepTouchesNear, worldView } from "../lib/world.js";
import { drawOrbit, FLY_S, orbitView } from "./orbit-view.js";

const MAX_ITERATIONS = 40; // iterates per "Let tang try"
const MIN_DRAG = 0.05; // a shorter drag (in speed units) is a tap, not a shot
const KEY_AIM = { speed: 0.8, heading_deg: 90 }; // where keyboard aiming starts
const KEY_TURN = { ArrowLeft: 5, ArrowRight: -5 }; // degrees per key press
const KEY_PUSH = { ArrowUp: 0.05, ArrowDown: -0.05 }; // speed per key press
const HIT = 1e-6; // a miss this small is a direct hit (in units of the pad's orbit radius)

const cliFor = (shot, iterations = 0) =>
  `python -m demos.orbit --speed ${shot.speed.toFixed(4)} ` +
  `--heading ${shot.heading_deg.toFixed(3)}` + (iterations ? ` --optimize ${iterations}` : "");

export default {
  id: "orbit",
  title: "An orbit",
  section: "scale",
  async mount(el, { call, ready }) {
    const ui = orbitView(el);
    const { canvas, show } = ui;
    el.dataset.state = "loading";
    show("status", "Starting Python…");
    const failed = () => show("status", "Python did not start, so nothing can fly.");
    if (!(await pythonStarted(ready, el, failed))) return;
    const scene = await call("orbit.scene");
    const view = worldView(canvas, scene.view); // scene units (y up) ↔ CSS pixels
    const game = new OrbitGame(scene, { ...ui, el, call, draw: () => drawOrbit(canvas, view, scene, game) });

    // dragging from the pad: the vector pad → pointer is the launch (1 scene unit = speed 1)
    canvas.addEventListener("pointerdown", (ev) => {
      if (!game.canShoot()) return;
      ev.preventDefault();
      canvas.setPointerCapture(ev.pointerId);
      el.dataset.pointer = ev.pointerType; // mouse, pen or touch: all the same here
      game.aimAt(view.fromEvent(ev));
    });
    canvas.addEventListener("pointermove", (ev) => {
      if (game.aim) game.aimAt(view.fromEvent(ev));
    });
    keepTouchesNear(canvas, view, () => (game.canShoot() ? scene.pad : null)); // drag from the pad
    canvas.addEventListener("pointercancel", () => {
      game.aim = null;
      game.ui.draw();
    });
    canvas.addEventListener("pointerup", (ev) => {
      if (game.aim) game.release(view.fromEvent(ev));
    });
    canvas.addEventListener("keydown", (ev) => {
      if (game.key(ev.key)) ev.preventDefault();
    });
    ui.tryButton.addEventListener("click", () => game.optimise());
    ui.stopButton.addEventListener("click", () => game.controller?.abort());
    ui.againButton.addEventListener("click", () => game.newRound());

    // the flight animation: only while on screen and the tab is shown
    animate(canvas, (_t, dt) => {
      if (!game.flying || game.flying.t >= FLY_S) return;
      game.flying.t += dt;
      game.ui.draw();
    });
    whenVisible(canvas, (visible) => game.setVisible(visible));
    onResize(canvas, game.ui.draw);
    game.setState("ready", `Drag from the pad (green), or use the arrow keys and Enter, to ` +
      `launch: ${scene.shots} shots. Hit ` +
      "the red target.");
    game.ui.draw();
  },
};

/** The card's state and rules: the player's shots, tang's iterates, the optimiser's run.
 * Results go to the readouts, the buttons and the card's data-* attributes (for tests). */
class OrbitGame {
  constructor(scene, ui) {
    this.scene = scene;
    this.ui = ui; // orbitView's parts, plus el, call and draw()
    this.shots = []; // the player's: orbit.shoot answers
    this.best = null;
    this.iterates = []; // tang's: orbit.optimize answers
    this.aim = null; // while dragging: {speed, heading_deg}
    this.flying = null; // {shot, t}: the newest path drawn progressively
    this.controller = null; // the running optimiser's AbortController
    this.round = 0; // a new round drops the answers to shots fired before it
    this.runs = 0;
    this.onScreen = true;
    this.resume = null; // the paused optimiser's way back
  }

  shotsLeft() {
    return this.scene.shots - this.shots.length;
  }

  canShoot() {
    return this.shotsLeft() > 0 && this.controller === null;
  }

  setState(state, status) {
    const { el, show, tryButton, stopButton, againButton } = this.ui;
    el.dataset.state = state;
    if (status) show("status", status);
    el.dataset.shots = String(this.shots.length);
    el.dataset.shotsLeft = String(this.shotsLeft());
    tryButton.disabled = !this.best || this.controller !== null;
    stopButton.disabled = this.controller === null;
    againButton.disabled = this.controller !== null ||
      (this.shots.length === 0 && this.iterates.length === 0);
  }

  /** The pointer at scene point [x, y]: the launch is the vector from the pad to it. */
  aimAt([x, y]) {
    const { pad, max_speed: maxSpeed } = this.scene;
    const dx = x - pad[0];
    const dy = y - pad[1];
    const speed = Math.min(Math.hypot(dx, dy), maxSpeed);
    this.showAim({ speed, heading_deg: (Math.atan2(dy, dx) * 180) / Math.PI });
  }

  showAim(aim) {
    this.aim = aim;
    this.ui.show("status", `Aiming: speed ${aim.speed.toFixed(2)}, heading ` +
      `${aim.heading_deg.toFixed(1)}°`);
    this.ui.draw();
  }

  /** Keyboard aiming, for the focused canvas: ←/→ turn the heading, ↑/↓ change the speed,
   * Enter or Space launches. True when the key was used. */
  key(name) {
    if (!this.canShoot()) return false;
    const aim = { ...(this.aim ?? KEY_AIM) };
    if (name in KEY_TURN) aim.heading_deg = ((aim.heading_deg + KEY_TURN[name] + 540) % 360) - 180;
    else if (name in KEY_PUSH) {
      aim.speed = Math.min(this.scene.max_speed, Math.max(0, aim.speed + KEY_PUSH[name]));
    } else if ((name === "Enter" || name === " ") && this.aim) {
      this.launch();
      return true;
    } else if (name !== "Enter" && name !== " ") return false; // Enter before aiming: show the aim

    this.showAim(aim);
    return true;
  }

  /** The drag ends at `point`: fire, unless it was too short to be a shot. */
  release(point) {
    this.aimAt(point);
    this.launch();
  }

  launch() {
    const launch = this.aim;
    this.aim = null;
    if (launch.speed < MIN_DRAG) {
      this.setState("ready", "Drag farther from the pad: the length of the drag is the speed.");
      this.ui.draw();
      return;
    }
    this.fire(launch);
  }

  async fire(launch) {
    const { call, show, command } = this.ui;
    const mine = this.round;
    try {
      const shot = await call("orbit.shoot", launch);
      if (mine !== this.round || this.shotsLeft() <= 0) return;
      this.shots.push(shot);
      if (!this.best || shot.miss < this.best.miss) this.best = shot;
      const best = this.best;
      this.flying = { shot, t: 0 };
      this.ui.el.dataset.bestMiss = String(best.miss);
      show("best", `${fmt(best.miss, 4)} (shot ${this.shots.indexOf(best) + 1})`);
      setCommand(command, cliFor(best, 30));
      const hit = shot.hit ? `hit the ${shot.hit}; ` : "";
      const left = this.shotsLeft();
      this.setState(left > 0 ? "ready" : "shots-used", `Shot ${this.shots.length}: ${hit}` +
        `missed by ${fmt(shot.miss, 4)}. ` + (left > 0 ? `${left} left, or let tang try.` :
        "No shots left: let tang try from your best."));
    } catch (err) {
      if (err.type !== "Cancelled") this.setState("error", `The worker failed: ${err.message}`);
    }
    this.ui.draw();
  }

  /** On screen and the tab shown again: a paused optimiser goes on. */
  setVisible(visible) {
    this.onScreen = visible;
    this.ui.el.dataset.visible = String(visible);
    if (visible && this.resume) {
      const go = this.resume;
      this.resume = null;
      go();
    }
  }

  /** Off screen or tab hidden: resolves once shown again (or the run is stopped). */
  visible(signal) {
    if (this.onScreen) return Promise.resolve();
    return new Promise((resolve) => {
      this.resume = resolve;
      signal.addEventListener("abort", resolve, { once: true });
    });
  }

  /** "Let tang try": one iterate per worker call, until converged, stalled, 40, or Stop. */
  async optimise() {
    if (!this.best || this.controller) return;
    const { el, show, call } = this.ui;
    const mine = new AbortController();
    this.controller = mine;
    this.iterates = [];
    this.flying = null;
    el.dataset.iterations = "0";
    const run = `r${++this.runs}-${Date.now()}`;
    this.setState("optimizing", "tang is aiming…");
    show("tang", "…");
    let from = this.best;
    try {
      const { stopped, last } = await runChunks(async (_last, signal) => {
        await this.visible(signal); // off screen or tab hidden: wait here, between two iterates
        if (signal.aborted) throw Object.assign(new Error("stopped"), { type: "Cancelled" });
        const it = await call("orbit.optimize",
          { speed: from.speed, heading_deg: from.heading_deg, run }, { signal });
        from = it;
        const reason = it.done || (it.iteration >= MAX_ITERATIONS ? "limit" : "");
        return { ...it, reason, done: reason !== "" };
      }, { signal: mine.signal, onProgress: (it) => this.progress(it) });
      this.finish(stopped, last);
    } catch (err) {
      this.controller = null;
      this.setState("error", `The worker failed: ${err.message}`);
    }
    this.ui.draw();
  }

  progress(it) {
    const { el, show } = this.ui;
    this.iterates.push(it);
    el.dataset.tangMiss = String(it.miss);
    el.dataset.iterations = String(it.iteration);
    show("tang", `${fmt(it.miss, 4)} after ${it.iteration} iteration${it.iteration > 1 ? "s" : ""}`);
    show("status", `tang: iteration ${it.iteration}, miss ${fmt(it.miss, 4)}` +
      (it.hit ? ` (hits the ${it.hit})` : ""));
    this.ui.draw();
  }

  /** The optimiser ended: say why, and how it compares with the player's best. */
  finish(stopped, last) {
    const best = this.best;
    const final = last ?? best;
    const why = stopped ? "stopped" : {
      converged: "converged",
      stalled: "no step lowers the miss from here",
      limit: `${MAX_ITERATIONS} iterations`,
    }[last.reason];
    const verdict = final.miss < HIT
      ? `a direct hit (your best missed by ${fmt(best.miss, 4)})`
      : final.miss < best.miss
        ? `${fmt(best.miss / final.miss, 2)}× closer than your best`
        : "no closer than your best";
    this.controller = null;
    this.flying = last ? { shot: last, t: 0 } : null;
    setCommand(this.ui.command, cliFor(best, Math.max(1, final.iteration ?? 1)));
    this.ui.el.dataset.reason = stopped ? "stopped" : last.reason;
    this.setState(stopped ? "stopped" : "done",
      `tang ${stopped ? "stopped" : "finished"} (${why}): miss ${fmt(final.miss, 4)}, ` +
      `${verdict}.`);
  }

  newRound() {
    const { el, show } = this.ui;
    this.round++;
    this.shots = [];
    this.best = null;
    this.iterates = [];
    this.flying = null;
    show("best", "…");
    show("tang", "…");
    Object.assign(el.dataset, { bestMiss: "", tangMiss: "", iterations: "", reason: "" });
    this.setState("ready", `Drag from the pad to launch: ${this.scene.shots} shots.`);
    this.ui.draw();
  }
}
