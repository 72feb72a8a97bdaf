// Same idea, every scale · 3. An orbit: drag from the launch pad to fling a probe among the
// planet and its moon (direction = heading, length = speed); three shots, the best miss kept.
// Then "Let tang try": from your best shot the worker runs gradient descent on (speed,
// heading), one iterate per call (orbit.optimize), each gradient from one dual pass through
// all 1,600 leapfrog steps; every iterate's path is drawn faintly, the last one boldly.
// The flight animation pauses off-screen; so does the optimiser, between two iterates.
import { cssColor, fitCanvas, onResize } from "../lib/canvas.js";
import { commandLine, setCommand } from "../lib/command.js";
import { h } from "../lib/dom.js";
import { fmt } from "../lib/format.js";
import { animate, runChunks, whenVisible } from "../lib/loop.js";

const MAX_ITERATIONS = 40; // iterates per "Let tang try"
const FLY_S = 1.2; // how long a shot's flight takes to draw
const MIN_DRAG = 0.05; // a shorter drag (in speed units) is a tap, not a shot
const SHOT_COLORS = ["#0891b2", "#d97706", "#db2777"];
const HIT = 1e-6; // a miss this small is a direct hit (in units of the pad's orbit radius)

const cliFor = (shot, iterations = 0) =>
  `python -m demos.orbit --speed ${shot.speed.toFixed(4)} ` +
  `--heading ${shot.heading_deg.toFixed(3)}` + (iterations ? ` --optimize ${iterations}` : "");

export default {
  id: "orbit",
  title: "An orbit",
  section: "scale",
  async mount(el, { call, ready }) {
    const canvas = h("canvas", {
      className: "orbit-canvas", role: "img",
      "aria-label": "A planet, its moon, a launch pad and a target. Drag from the pad to " +
        "launch a probe: the drag's direction is the heading, its length the speed.",
    });
    const tryButton = h("button", { type: "button", className: "primary", disabled: true },
      "Let tang try");
    const stopButton = h("button", { type: "button", disabled: true }, "Stop");
    const againButton = h("button", { type: "button", disabled: true }, "New round");
    const out = (name) => h("dd", { dataset: { readout: name } }, "…");
    const readouts = h("dl", { className: "readouts" },
      h("dt", {}, "Status"), out("status"),
      h("dt", {}, "Your best miss"), out("best"),
      h("dt", {}, "tang's miss"), out("tang"));
    const command = commandLine("python -m demos.orbit --speed 1 --heading 90 --optimize 30");
    el.append(
      h("p", { className: "demo-what" }, "tang differentiates the miss through all 1,600 " +
        "steps of the flight with one dual number carrying two tangents (speed and heading), " +
        "and walks downhill."),
      canvas,
      h("div", { className: "orbit-buttons" }, tryButton, stopButton, againButton),
      readouts, command,
    );
    const show = (name, text) => (el.querySelector(`[data-readout="${name}"]`).textContent = text);
    el.dataset.state = "loading";
    show("status", "Starting Python…");

    try {
      await ready;
    } catch {
      el.dataset.state = "error";
      show("status", "Python did not start, so nothing can fly.");
      return;
    }
    const scene = await call("orbit.scene");
    const [vx0, vx1, vy0, vy1] = scene.view;

    // the view: scene units (y up) ↔ CSS pixels, the scene's box fitted into the canvas
    let view = { k: 1, ox: 0, oy: 0 };
    const toPx = ([x, y]) => [view.ox + x * view.k, view.oy - y * view.k];
    const toScene = (px, py) => [(px - view.ox) / view.k, (view.oy - py) / view.k];
    function fitView(width, height) {
      const k = Math.min(width / (vx1 - vx0), height / (vy1 - vy0));
      view = { k, ox: (width - k * (vx1 + vx0)) / 2, oy: (height + k * (vy1 + vy0)) / 2 };
      canvas.dataset.view = JSON.stringify(view); // for tests: scene → px inside the canvas
    }

    // state
    let shots = []; // the player's: orbit.shoot answers
    let best = null;
    let iterates = []; // tang's: orbit.optimize answers
    let aim = null; // while dragging: {speed, heading_deg}
    let flying = null; // {shot, t}: the newest path drawn progressively
    let controller = null; // the running optimiser's AbortController
    let round = 0; // a new round drops the answers to shots fired before it
    let runs = 0;
    let onScreen = true;

    const shotsLeft = () => scene.shots - shots.length;
    function setState(state, status) {
      el.dataset.state = state;
      if (status) show("status", status);
      el.dataset.shots = String(shots.length);
      el.dataset.shotsLeft = String(shotsLeft());
      tryButton.disabled = !best || controller !== null;
      stopButton.disabled = controller === null;
      againButton.disabled = controller !== null || (shots.length === 0 && iterates.length === 0);
    }

    // dragging from the pad: the vector pad → pointer is the launch (1 scene unit = speed 1)
    function aimAt(ev) {
      const rect = canvas.getBoundingClientRect();
      const [x, y] = toScene(ev.clientX - rect.left, ev.clientY - rect.top);
      const dx = x - scene.pad[0];
      const dy = y - scene.pad[1];
      const speed = Math.min(Math.hypot(dx, dy), scene.max_speed);
      aim = { speed, heading_deg: (Math.atan2(dy, dx) * 180) / Math.PI };
      show("status", `Aiming: speed ${speed.toFixed(2)}, heading ${aim.heading_deg.toFixed(1)}°`);
      draw();
    }
    const canShoot = () => shotsLeft() > 0 && controller === null;
    canvas.addEventListener("pointerdown", (ev) => {
      if (!canShoot()) return;
      ev.preventDefault();
      canvas.setPointerCapture(ev.pointerId);
      el.dataset.pointer = ev.pointerType; // mouse, pen or touch: all the same here
      aimAt(ev);
    });
    canvas.addEventListener("pointermove", (ev) => {
      if (aim) aimAt(ev);
    });
    canvas.addEventListener("pointercancel", () => {
      aim = null;
      draw();
    });
    canvas.addEventListener("pointerup", (ev) => {
      if (!aim) return;
      aimAt(ev);
      const launch = aim;
      aim = null;
      if (launch.speed < MIN_DRAG) {
        setState("ready", "Drag farther from the pad: the length of the drag is the speed.");
        draw();
        return;
      }
      fire(launch);
    });

    async function fire(launch) {
      const mine = round;
      try {
        const shot = await call("orbit.shoot", launch);
        if (mine !== round || shotsLeft() <= 0) return;
        shots.push(shot);
        if (!best || shot.miss < best.miss) best = shot;
        flying = { shot, t: 0 };
        el.dataset.bestMiss = String(best.miss);
        show("best", `${fmt(best.miss, 4)} (shot ${shots.indexOf(best) + 1})`);
        setCommand(command, cliFor(best, 30));
        const hit = shot.hit ? `hit the ${shot.hit}; ` : "";
        const left = shotsLeft();
        setState(left > 0 ? "ready" : "shots-used", `Shot ${shots.length}: ${hit}missed by ` +
          `${fmt(shot.miss, 4)}. ` + (left > 0 ? `${left} left, or let tang try.` :
            "No shots left: let tang try from your best."));
      } catch (err) {
        if (err.type !== "Cancelled") setState("error", `The worker failed: ${err.message}`);
      }
      draw();
    }

    // "Let tang try": one iterate per worker call, until converged, stalled, 40, or Stop
    async function optimise() {
      if (!best || controller) return;
      const mine = new AbortController();
      controller = mine;
      iterates = [];
      flying = null;
      el.dataset.iterations = "0";
      const run = `r${++runs}-${Date.now()}`;
      setState("optimizing", "tang is aiming…");
      show("tang", "…");
      const visible = (signal) => onScreen ? Promise.resolve() : new Promise((resolve) => {
        resumeOptimiser = resolve;
        signal.addEventListener("abort", resolve, { once: true });
      });
      let from = best;
      try {
        const { stopped, last } = await runChunks(async (_last, signal) => {
          await visible(signal); // off screen or tab hidden: wait here, between two iterates
          if (signal.aborted) throw Object.assign(new Error("stopped"), { type: "Cancelled" });
          const it = await call("orbit.optimize",
            { speed: from.speed, heading_deg: from.heading_deg, run }, { signal });
          from = it;
          const reason = it.done || (it.iteration >= MAX_ITERATIONS ? "limit" : "");
          return { ...it, reason, done: reason !== "" };
        }, {
          signal: mine.signal,
          onProgress: (it) => {
            iterates.push(it);
            el.dataset.tangMiss = String(it.miss);
            el.dataset.iterations = String(it.iteration);
            show("tang", `${fmt(it.miss, 4)} after ${it.iteration} ` +
              `iteration${it.iteration > 1 ? "s" : ""}`);
            show("status", `tang: iteration ${it.iteration}, miss ${fmt(it.miss, 4)}` +
              (it.hit ? ` (hits the ${it.hit})` : ""));
            draw();
          },
        });
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
        controller = null;
        flying = last ? { shot: last, t: 0 } : null;
        setCommand(command, cliFor(best, Math.max(1, final.iteration ?? 1)));
        el.dataset.reason = stopped ? "stopped" : last.reason;
        setState(stopped ? "stopped" : "done",
          `tang ${stopped ? "stopped" : "finished"} (${why}): miss ${fmt(final.miss, 4)}, ` +
          `${verdict}.`);
      } catch (err) {
        controller = null;
        setState("error", `The worker failed: ${err.message}`);
      }
      draw();
    }
    let resumeOptimiser = null;
    tryButton.addEventListener("click", optimise);
    stopButton.addEventListener("click", () => controller?.abort());
    againButton.addEventListener("click", () => {
      round++;
      shots = [];
      best = null;
      iterates = [];
      flying = null;
      show("best", "…");
      show("tang", "…");
      el.dataset.bestMiss = "";
      el.dataset.tangMiss = "";
      el.dataset.iterations = "";
      el.dataset.reason = "";
      setState("ready", `Drag from the pad to launch: ${scene.shots} shots.`);
      draw();
    });

    // drawing
    function path(ctx, points, upTo = points.length) {
      ctx.beginPath();
      for (let i = 0; i < upTo; i++) ctx.lineTo(...toPx(points[i]));
      ctx.stroke();
    }
    function draw() {
      const { ctx, width, height } = fitCanvas(canvas);
      fitView(width, height);
      const fg = cssColor(canvas, "--fg", "#1b1e28");
      const muted = cssColor(canvas, "--muted", "#5d6475");
      const line = cssColor(canvas, "--line", "#e2e5ee");
      const accent = cssColor(canvas, "--accent", "#4f46e5");
      ctx.clearRect(0, 0, width, height);
      ctx.lineCap = "round";
      ctx.lineJoin = "round";

      // speed 1 around the pad: the circular speed (a drag to this ring circles the planet)
      const [px, py] = toPx(scene.pad);
      ctx.strokeStyle = line;
      ctx.setLineDash([4, 4]);
      ctx.beginPath();
      ctx.arc(px, py, view.k, 0, 2 * Math.PI);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = muted;
      ctx.font = "11px system-ui, sans-serif";
      ctx.textAlign = "center";
      ctx.fillText("speed 1: a circular orbit", px, py - view.k - 4);

      for (const b of scene.bodies) {
        const [bx, by] = toPx([b.x, b.y]);
        ctx.fillStyle = b.name === scene.heaviest ? "#64748b" : "#94a3b8";
        ctx.beginPath();
        ctx.arc(bx, by, b.radius * view.k, 0, 2 * Math.PI);
        ctx.fill();
      }
      // the target: a ring and a cross
      const [tx, ty] = toPx(scene.target);
      ctx.strokeStyle = "#dc2626";
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.arc(tx, ty, 9, 0, 2 * Math.PI);
      ctx.moveTo(tx - 13, ty);
      ctx.lineTo(tx + 13, ty);
      ctx.moveTo(tx, ty - 13);
      ctx.lineTo(tx, ty + 13);
      ctx.stroke();

      // the player's shots (the best one thicker), then tang's iterates: faint, the last bold
      shots.forEach((s, i) => {
        if (flying?.shot === s) return;
        ctx.strokeStyle = SHOT_COLORS[i % SHOT_COLORS.length];
        ctx.lineWidth = s === best ? 2.5 : 1.5;
        ctx.globalAlpha = iterates.length ? 0.45 : 1;
        path(ctx, s.path);
      });
      ctx.globalAlpha = 1;
      const lastIt = iterates[iterates.length - 1];
      ctx.strokeStyle = accent;
      for (const it of iterates) {
        if (it === lastIt) continue;
        ctx.globalAlpha = 0.22;
        ctx.lineWidth = 1.2;
        path(ctx, it.path);
      }
      ctx.globalAlpha = 1;
      if (lastIt && flying?.shot !== lastIt) {
        ctx.lineWidth = 3;
        path(ctx, lastIt.path);
      }
      if (flying) {
        const s = flying.shot;
        const n = Math.max(2, Math.ceil(s.path.length * Math.min(1, flying.t / FLY_S)));
        ctx.strokeStyle = iterates.includes(s) ? accent : SHOT_COLORS[shots.indexOf(s) % 3];
        ctx.lineWidth = 3;
        path(ctx, s.path, n);
        ctx.fillStyle = fg;
        ctx.beginPath();
        ctx.arc(...toPx(s.path[n - 1]), 4, 0, 2 * Math.PI);
        ctx.fill();
      }
      // the nearest point of the best shot so far (tang's, once it has one)
      const lead = lastIt ?? best;
      if (lead && (!flying || flying.t >= FLY_S)) {
        const [nx, ny] = toPx(lead.nearest);
        ctx.strokeStyle = muted;
        ctx.setLineDash([2, 3]);
        ctx.lineWidth = 1;
        ctx.beginPath();
        ctx.moveTo(nx, ny);
        ctx.lineTo(tx, ty);
        ctx.stroke();
        ctx.setLineDash([]);
      }

      // the pad, and the launch arrow while aiming
      ctx.fillStyle = "#15803d";
      ctx.fillRect(px - 6, py - 6, 12, 12);
      if (aim) {
        const rad = (aim.heading_deg * Math.PI) / 180;
        const [ax, ay] = toPx([scene.pad[0] + aim.speed * Math.cos(rad),
          scene.pad[1] + aim.speed * Math.sin(rad)]);
        ctx.strokeStyle = fg;
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

    // the flight animation: only while on screen and the tab is shown
    animate(canvas, (_t, dt) => {
      if (!flying || flying.t >= FLY_S) return;
      flying.t += dt;
      draw();
    });
    whenVisible(canvas, (visible) => {
      onScreen = visible;
      el.dataset.visible = String(visible);
      if (visible && resumeOptimiser) {
        const go = resumeOptimiser;
        resumeOptimiser = null;
        go();
      }
    });
    onResize(canvas, draw);
    setState("ready", `Drag from the pad (green) to launch: ${scene.shots} shots. Hit the ` +
      "red target.");
    draw();
  },
};
