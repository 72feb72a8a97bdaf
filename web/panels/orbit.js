// Same idea, every scale · 3. An orbit: drag from the launch pad to fling a probe among the
// planet and its moon (direction = heading, length = speed); three shots, the best miss kept.
// Then "Let tang try": first a swarm (orbit.swarm, one awaited worker call): 4,096 shots on
// a speed × heading grid, each with its gradient through all 1,600 leapfrog steps in ONE
// WebGPU kernel (64 on the CPU without WebGPU), the best few refined in batches, drawn as a
// heat map of the miss; then the worker polishes the winner (or your best, if closer) by
// gradient descent, one iterate per call (orbit.optimize), each gradient from one dual pass;
// every iterate's path is drawn faintly, the last one boldly. The flight animation pauses
// off-screen; so does the polish, between two iterates (and before its first).
// ./orbit-view.js builds the card and draws it; this file is the controller.
import { pythonStarted } from "../lib/card.js";
import { onResize } from "../lib/canvas.js";
import { setCommand } from "../lib/command.js";
import { fmt } from "../lib/format.js";
import { animate, runChunks, whenVisible } from "../lib/loop.js";
import { keepTouchesNear, worldView } from "../lib/world.js";
import { drawOrbit, drawSwarm, FLY_S, orbitView } from "./orbit-view.js";

const MAX_ITERATIONS = 40; // polishing iterates per "Let tang try"
const SWARM_N = 4096; // the swarm's shots on a GPU (64 × 64; the worker flies fewer on a CPU)
const DEVICE = "auto"; // WebGPU when the browser offers an adapter, else the CPU
const MIN_DRAG = 0.05; // a shorter drag (in speed units) is a tap, not a shot
const KEY_AIM = { speed: 0.8, heading_deg: 90 }; // where keyboard aiming starts
const KEY_TURN = { ArrowLeft: 5, ArrowRight: -5 }; // degrees per key press
const KEY_PUSH = { ArrowUp: 0.05, ArrowDown: -0.05 }; // speed per key press
const HIT = 1e-6; // a miss this small is a direct hit (in units of the pad's orbit radius)

const cliFor = (shot, iterations = 0) =>
  `python -m demos.orbit --speed ${shot.speed.toFixed(4)} ` +
  `--heading ${shot.heading_deg.toFixed(3)}` + (iterations ? ` --optimize ${iterations}` : "");
// tang's try on the desktop: the same grid (on the CLI's own device), the winner polished
// (without --optimize: until it converges, 30 iterations at most)
const cliSwarm = (n, iterations) =>
  `python -m demos.orbit --swarm ${n}` + (iterations ? ` --optimize ${iterations}` : "");
const count = (n) => n.toLocaleString("en");
const plural = (n, word) => `${count(n)} ${word}${n === 1 ? "" : "s"}`;

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
    const game = new OrbitGame(scene, { ...ui, el, call, draw: () => drawOrbit(canvas, view, scene, game),
      drawSwarm: () => game.swarm && drawSwarm(ui.swarm.canvas(), game.swarm, game.iterates.at(-1)) });

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
    onResize(ui.swarm.figure, game.ui.drawSwarm);
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
    this.swarm = null; // tang's swarm: the orbit.swarm answer
    this.from = null; // where the polish started: {shot, whose, swarm: its n or 0}
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

  /** "Let tang try": the swarm (one worker call), then the polish of its winner (or of your
   * best, when closer): one iterate per worker call until converged, stalled, 40, or Stop. */
  async optimise() {
    if (!this.best || this.controller) return;
    const { el, show } = this.ui;
    const mine = new AbortController();
    this.controller = mine;
    this.iterates = [];
    this.flying = null;
    this.clearSwarm();
    Object.assign(el.dataset, { iterations: "0", tangMiss: "", reason: "" });
    show("tang", "…");
    try {
      const { stopped, swarm } = await this.flySwarm(mine.signal);
      if (stopped) {
        this.finish(true, null);
      } else {
        const polished = await this.polish(this.startFrom(swarm), mine.signal);
        this.finish(polished.stopped, polished.last);
      }
    } catch (err) {
      this.controller = null;
      this.setState("error", `The worker failed: ${err.message}`);
    }
    this.ui.draw();
  }

  /** The swarm: which device will fly it (gpu.info), then orbit.swarm, awaited while the
   * status counts the seconds. Resolves to {stopped} or {swarm} (null when it failed: the
   * polish then starts from your best). */
  async flySwarm(signal) {
    const { el, show, call } = this.ui;
    el.dataset.swarm = "flying";
    show("swarm", "…");
    this.setState("swarming", `Flying ${count(SWARM_N)} shots…`);
    const started = performance.now();
    let doing = `Flying ${count(SWARM_N)} shots…`;
    const tick = () => {
      const seconds = (performance.now() - started) / 1000;
      el.dataset.swarmElapsed = seconds.toFixed(1);
      show("status", `${doing} ${seconds.toFixed(1)} s`);
    };
    const timer = setInterval(tick, 200); // the page's own clock: it goes on while the worker flies
    try {
      const info = await call("gpu.info", { device: DEVICE }, { signal });
      doing = info.kind === "cpu" ? "No WebGPU here: flying a small swarm on the CPU instead…"
        : `Flying ${count(SWARM_N)} shots on the GPU (${info.name})…`;
      tick();
      const swarm = await call("orbit.swarm", { n: SWARM_N, device: DEVICE }, { signal });
      if (signal.aborted) throw Object.assign(new Error("stopped"), { type: "Cancelled" });
      this.showSwarm(swarm);
      return { swarm };
    } catch (err) {
      if (signal.aborted || err.type === "Cancelled") {
        el.dataset.swarm = "stopped";
        show("swarm", "stopped");
        return { stopped: true };
      }
      el.dataset.swarm = "failed";
      show("swarm", `the swarm failed (${err.message}); tang polishes your best instead`);
      return { swarm: null };
    } finally {
      clearInterval(timer);
    }
  }

  /** The swarm's answer: its heat map and what flew it, in the figure and the readout. */
  showSwarm(swarm) {
    const { el, show, swarm: fig } = this.ui;
    this.swarm = swarm;
    const best = swarm.best;
    fig.note.textContent = `${swarmText(swarm)} Bright: near misses; red ring: the best; ` +
      "white dots: the candidates refined; blue: tang's polished shot.";
    fig.canvas().setAttribute("aria-label", `The swarm's miss over launch speed (up) and ` +
      `heading (across), ${count(swarm.n)} shots on a log colour scale` + (best
      ? `; the best at speed ${fmt(best.speed, 4)}, heading ${fmt(best.heading_deg, 4)}°, ` +
        `missing by ${fmt(best.miss, 3)}.` : "."));
    fig.figure.hidden = false;
    Object.assign(el.dataset, {
      swarm: "drawn", swarmN: String(swarm.n), swarmDevice: swarm.device,
      swarmMiss: best ? String(best.miss) : "",
    });
    const f32 = swarm.device === "cpu" ? "" : " in f32"; // a GPU's floats: 0 is below 1e−7
    show("swarm", best ? `${fmt(best.miss, 4)}${f32}, the best of ${count(swarm.n)} shots`
      : `no finite miss in ${count(swarm.n)} shots`);
    this.ui.drawSwarm();
  }

  clearSwarm() {
    const { el, show, swarm: fig } = this.ui;
    this.swarm = null;
    fig.figure.hidden = true;
    fig.note.textContent = "";
    show("swarm", "…");
    Object.assign(el.dataset, { swarm: "", swarmN: "", swarmDevice: "", swarmMiss: "", swarmElapsed: "" });
  }

  /** Where the polish starts: the swarm's best, or your best when the swarm found nothing
   * closer (or failed). */
  startFrom(swarm) {
    const s = swarm?.best;
    if (s && typeof s.miss === "number" && s.miss < this.best.miss) {
      return { shot: s, whose: "the swarm's best", swarm: swarm.n };
    }
    return { shot: this.best, whose: "your best", swarm: 0 };
  }

  /** The polish: orbit.optimize from `from.shot`, one iterate per call; waits off screen
   * (or with the tab hidden) before each call. Resolves to runChunks's {stopped, last}. */
  async polish(from, signal) {
    const { call, el } = this.ui;
    this.from = from;
    el.dataset.polishFrom = from.swarm ? "swarm" : "player";
    const run = `r${++this.runs}-${Date.now()}`;
    this.setState("optimizing", `tang polishes ${from.whose}…`);
    let at = from.shot;
    return runChunks(async (_last, sig) => {
      await this.visible(sig); // off screen or tab hidden: wait here, between two iterates
      if (sig.aborted) throw Object.assign(new Error("stopped"), { type: "Cancelled" });
      const it = await call("orbit.optimize",
        { speed: at.speed, heading_deg: at.heading_deg, run }, { signal: sig });
      at = it;
      const reason = it.done || (it.iteration >= MAX_ITERATIONS ? "limit" : "");
      return { ...it, reason, done: reason !== "" };
    }, { signal, onProgress: (it) => this.progress(it) });
  }

  progress(it) {
    const { el, show } = this.ui;
    this.iterates.push(it);
    el.dataset.tangMiss = String(it.miss);
    el.dataset.iterations = String(it.iteration);
    show("tang", it.iteration ? `${fmt(it.miss, 4)} after ${plural(it.iteration, "iteration")} ` +
      `from ${this.from.whose}` : `${fmt(it.miss, 4)}: ${this.from.whose}, already a hit`);
    show("status", `tang: iteration ${it.iteration}, miss ${fmt(it.miss, 4)}` +
      (it.hit ? ` (hits the ${it.hit})` : ""));
    this.ui.draw();
    this.ui.drawSwarm();
  }

  /** The run ended: say why, and how tang's miss compares with the player's best. */
  finish(stopped, last) {
    const best = this.best;
    const final = last ?? best;
    this.controller = null;
    this.ui.el.dataset.reason = stopped ? "stopped" : last.reason;
    if (stopped && !last) {
      this.setState("stopped", `tang stopped before it had a shot to show: your best ` +
        `stands (miss ${fmt(best.miss, 4)}).`);
      return;
    }
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
    this.flying = { shot: last, t: 0 };
    const iterations = final.iteration ?? 0;
    setCommand(this.ui.command, this.from.swarm ? cliSwarm(this.from.swarm, iterations)
      : cliFor(best, Math.max(1, iterations)));
    this.setState(stopped ? "stopped" : "done",
      `tang ${stopped ? "stopped" : "finished"} (${why}) from ${this.from.whose}: miss ` +
      `${fmt(final.miss, 4)}, ${verdict}.`);
  }

  newRound() {
    const { el, show } = this.ui;
    this.round++;
    this.shots = [];
    this.best = null;
    this.iterates = [];
    this.flying = null;
    this.clearSwarm();
    show("best", "…");
    show("tang", "…");
    Object.assign(el.dataset, { bestMiss: "", tangMiss: "", iterations: "", reason: "", polishFrom: "" });
    this.setState("ready", `Drag from the pad to launch: ${this.scene.shots} shots.`);
    this.ui.draw();
  }
}

/** Which device flew the swarm and how fast, or why the CPU did. */
function swarmText(r) {
  const took = `with their gradients in ${fmt(r.seconds.swarm, 2)} s`;
  const rate = r.shot_gradients_per_second
    ? `: ${count(Math.round(r.shot_gradients_per_second))} shot gradients a second` : "";
  const refined = r.refined.length
    ? `; the best ${plural(r.refined.length, "candidate")} refined in ${fmt(r.seconds.refine, 2)} s`
    : "";
  if (r.device !== "cpu") {
    return `${count(r.n)} shots ${took} on the GPU (${r.device_name})${rate}${refined}.`;
  }
  const why = (r.fallback ?? "").split("; ").filter((w) => !w.startsWith("n cut")).join("; ");
  const head = !why || /adapter|navigator\.gpu|not available|no gpu/i.test(why) ? "No WebGPU here"
    : `WebGPU did not fly it (${why})`;
  return `${head}: ${count(r.n)} shots on the CPU instead, ${took}${rate}${refined}.`;
}
