// The page shell: boot status, error panel, and the panels listed in panels/registry.js.
// Python runs only in the worker (rpc.js); this file touches the DOM.
import { keepFocus } from "./lib/focus.js";
import * as rpc from "./rpc.js";
import panelFiles from "./panels/registry.js";

const STAGES = ["runtime", "python", "tang", "ready"];
const STAGE_NAMES = {
  runtime: "Downloading runtime",
  python: "Starting Python",
  tang: "Installing tang",
  ready: "Ready",
};
const BOOT_WATCHDOG_MS = 90_000; // no word from the worker for this long: say so

const $ = (id) => document.getElementById(id);
const boot = $("boot");
const started = performance.now();
let finished = false;
let lastWord = performance.now();
let stage = "runtime";

function showStage(msg) {
  stage = msg.stage ?? stage;
  lastWord = performance.now();
  boot.dataset.stage = stage;
  const index = STAGES.indexOf(stage);
  for (const li of boot.querySelectorAll(".stages li")) {
    const i = STAGES.indexOf(li.dataset.stage);
    li.classList.toggle("done", i < index || stage === "ready");
    li.classList.toggle("active", i === index && stage !== "ready");
  }
  const pct = Math.round(100 * (msg.progress ?? 0));
  $("boot-bar").style.width = `${pct}%`;
  boot.querySelector(".progress").setAttribute("aria-valuenow", String(pct));
  $("boot-detail").textContent = msg.detail || STAGE_NAMES[stage] || "\u00a0";
}

function showError({ stage: where = stage, message, hint }) {
  if (finished) return;
  finished = true;
  boot.dataset.stage = "error";
  boot.querySelector(`.stages li[data-stage="${where}"]`)?.classList.add("failed");
  $("error-stage").textContent = STAGE_NAMES[where] ?? where;
  $("error-message").textContent = message;
  $("error-hint").textContent = hint ?? "Reload the page.";
  $("error").hidden = false;
  $("python-badge").textContent = "Python: failed";
  $("python-badge").classList.add("bad");
  document.body.dataset.state = "error";
}

function tick() {
  if (finished) return;
  const now = performance.now();
  $("boot-elapsed").textContent = `${((now - started) / 1000).toFixed(1)} s`;
  if (now - lastWord > BOOT_WATCHDOG_MS) {
    showError({
      message: `No progress for ${BOOT_WATCHDOG_MS / 1000} s while "${STAGE_NAMES[stage]}".`,
      hint: "The worker seems stuck. Reload the page; if it happens again, restart " +
        "`python build.py serve` and try another browser.",
    });
    return;
  }
  setTimeout(tick, 100);
}

rpc.onBoot((msg) => {
  if (msg.type === "error") showError(msg);
  else if (!finished) showStage(msg);
});

const readyInfo = rpc.ready.then((info) => {
  finished = true;
  const bootMs = performance.now() - started;
  const total = performance.now(); // since navigation start
  $("boot-elapsed").textContent = `${(bootMs / 1000).toFixed(2)} s`;
  boot.classList.add("collapsed");
  $("python-badge").textContent = `Python ${info.python} · tang ${info.tang}`;
  $("python-badge").classList.add("good");
  document.body.dataset.state = "ready";
  window.tang.readyAt = total;
  return { ...info, bootMs };
});
readyInfo.catch(() => {});

// Groups of cards: a panel whose module says `section: "scale"` is mounted in that group,
// which stands where the first of its panels is listed in registry.js.
const SECTIONS = {
  scale: {
    title: "Same idea, every scale",
    lede: "One differentiable core, from one number to a model: each card runs tang in this " +
      "page's worker, and the command under it runs the same code on your desktop.",
  },
  build: {
    title: "What you can build",
    lede: "Every example on this page is one command from a fresh clone.",
  },
};

function sectionArea(area, sections, name) {
  if (!name) return area;
  if (!sections.has(name)) {
    const info = SECTIONS[name] ?? { title: name, lede: "" };
    const group = document.createElement("section");
    group.className = `panel-section section-${name}`;
    group.id = `section-${name}`;
    const title = document.createElement("h2");
    title.className = "section-title";
    title.textContent = info.title;
    const lede = document.createElement("p");
    lede.className = "section-lede";
    lede.textContent = info.lede;
    const row = document.createElement("div");
    row.className = "section-cards";
    group.append(title, lede, row);
    area.append(group);
    sections.set(name, row);
  }
  return sections.get(name);
}

async function mountPanels() {
  const area = $("panels");
  const sections = new Map();
  // import every panel module at once, mount them in the registry's order
  const modules = panelFiles.map((file) => import(`./panels/${file}`));
  for (const m of modules) m.catch(() => {}); // reported below, in the panel's card
  for (const [i, file] of panelFiles.entries()) {
    const card = document.createElement("section");
    card.className = "card panel";
    const heading = document.createElement("h2");
    const body = document.createElement("div");
    body.className = "panel-body";
    try {
      const { default: panel } = await modules[i];
      card.id = `panel-${panel.id}`;
      heading.textContent = panel.title;
      card.append(heading, body);
      sectionArea(area, sections, panel.section).append(card);
      panel.mount(body, { ...rpc, ready: readyInfo }).catch((err) => panelError(body, err));
    } catch (err) {
      heading.textContent = file;
      card.append(heading, body);
      area.append(card);
      panelError(body, err);
    }
  }
}

function panelError(body, err) {
  const p = document.createElement("p");
  p.className = "panel-error";
  p.textContent = `This panel failed: ${err?.message ?? err}`;
  body.append(p);
  console.warn(err);
}

// For tests, benchmarks and the console: the same client the panels use. Every test hook
// lives here, under window.tang (a panel adds its own as window.tang.<panel id>, e.g. the
// editor's keystroke timings in window.tang.editor).
window.tang = {
  call: rpc.call,
  ready: readyInfo,
  canInterrupt: rpc.canInterrupt,
  warmUp: rpc.warmUp,
  waiting: rpc.waiting,
  readyAt: null,
  stage: () => (document.body.dataset.state === "error" ? "error" : boot.dataset.stage),
};

tick();
keepFocus(document); // a control disabled while focused hands focus on (lib/focus.js)
mountPanels();
