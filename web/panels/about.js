// About: what is running, obtained through the worker.
export default {
  id: "about",
  title: "About this page",
  async mount(el, { call, ready }) {
    const intro = document.createElement("p");
    intro.textContent = "tang is running in this page: the Python below answered through the worker.";
    const facts = document.createElement("dl");
    facts.className = "facts";
    for (const [name, label] of [
      ["tang", "tang"], ["python", "Python"], ["pyodide", "Pyodide"], ["boot", "Boot"],
      ["rtt", "Round trip"],
    ]) {
      const dt = document.createElement("dt");
      const dd = document.createElement("dd");
      dt.textContent = label;
      dd.dataset.fact = name;
      dd.textContent = "…";
      facts.append(dt, dd);
    }
    el.replaceChildren(intro, facts);
    const fact = (name, text) => (el.querySelector(`[data-fact="${name}"]`).textContent = text);
    let info;
    try {
      info = await ready;
    } catch {
      el.querySelector("p").textContent = "Python did not start, so there is nothing to show here.";
      for (const n of ["tang", "python", "pyodide", "boot", "rtt"]) fact(n, "—");
      return;
    }
    const v = await call("version");
    fact("tang", v.tang);
    fact("python", `${v.python} (${v.platform})`);
    fact("pyodide", info.pyodide);
    fact("boot", `${(info.bootMs / 1000).toFixed(2)} s`);
    const t = performance.now();
    const n = 20;
    for (let i = 0; i < n; i++) await call("ping", { payload: i });
    fact("rtt", `${((performance.now() - t) / n).toFixed(2)} ms per call`);
  },
};
