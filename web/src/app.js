// The agent's web page: an overview of every GPU (#/) and a page per GPU
// (#/gpu/N). It reads only the agent's own JSON API (/api/v1/current,
// /api/v1/findings, /api/v1/history) and draws with uPlot, bundled in.
(function () {
  "use strict";
  const $ = (sel, el) => (el || document).querySelector(sel);
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  const pct = (v) => (v == null || isNaN(v) ? "–" : Math.round(v * 100) + "%");
  const gib = (b) => (b == null ? "–" : (b / 2 ** 30).toFixed(0));
  const getJSON = (url) => fetch(url).then((r) => { if (!r.ok) throw new Error(url + ": " + r.status); return r.json(); });

  // A series' labels are an object ({"mode":"idle"}), as the API writes
  // them; shown as name="value" pairs in name order.
  const labelText = (labels) => Object.keys(labels || {}).sort().map((k) => k + '="' + labels[k] + '"').join(",");
  // The q-quantile of cumulative buckets [[le, count]] sorted by le, as
  // histogram_quantile in src/diagnose/mapping.cpp.
  const quantile = (q, buckets) => {
    const total = buckets.length ? buckets[buckets.length - 1][1] : 0;
    if (!(total > 0)) return null;
    const rank = q * total;
    let lower = 0, below = 0;
    for (const [le, cum] of buckets) {
      if (cum >= rank) return le === Infinity ? lower : cum - below > 0 ? lower + ((le - lower) * (rank - below)) / (cum - below) : le;
      lower = le; below = cum;
    }
    return lower;
  };
  const LAYERS = [
    { name: "compute", series: ["gpu_utilization_ratio", "gpu_sm_active_ratio", "gpu_sm_occupancy_ratio", "gpu_tensor_core_util_ratio"] },
    { name: "memory", series: ["gpu_mem_bandwidth_util_ratio", "gpu_memory_util_ratio", "gpu_memory_fragmentation_ratio"] },
    { name: "io", series: ["gpu_pcie_rx_bandwidth_util_ratio", "gpu_pcie_tx_bandwidth_util_ratio", "gpu_nvlink_bandwidth_util_ratio"] },
    { name: "health", series: ["gpu_temperature_celsius", "gpu_power_watts"] },
  ];
  const COLORS = ["#5aa9ff", "#3fb950", "#d29922", "#bc8cff", "#f85149", "#39c5cf", "#ff9bce", "#8b949e"];

  let timer = null;
  let charts = [];
  const state = { range: "30m" };

  function theme(toggle) {
    let t = localStorage.getItem("gpulens-theme") || (matchMedia("(prefers-color-scheme: light)").matches ? "light" : "dark");
    if (toggle) { t = t === "light" ? "dark" : "light"; localStorage.setItem("gpulens-theme", t); }
    document.documentElement.classList.toggle("light", t === "light");
    $("#theme").textContent = t === "light" ? "dark" : "light";
  }

  function header(cur) {
    $("#banner").hidden = !cur.simulated;
    $("#sources").innerHTML = cur.sources.map((s) =>
      `<span class="chip ${s.up ? "up" : "down"}" title="${esc(s.error || "up")}">${esc(s.name)}</span>`).join("");
  }

  // Per GPU: field lookup by name (first series of that name), from the
  // series /api/v1/current lists with their labels as objects.
  function fieldsOf(g) {
    const out = {};
    for (const s of g.series || []) {
      const l = s.labels || {};
      if (!(s.name in out)) out[s.name] = s.value;
      if (s.name === "gpu_clock_event_active" && s.value > 0) (out.reasons = out.reasons || []).push(l.reason);
      // gpu_job_info: the job(s) holding the GPU (docs/jobs.md), with the rank where known.
      if (s.name === "gpu_job_info") (out.jobs = out.jobs || []).push((l.job_id || "") + (l.rank ? " rank " + l.rank : ""));
    }
    return out;
  }

  // The job(s) of a GPU, one line ("" when none).
  function jobHTML(f) {
    return (f.jobs || []).length
      ? `<div class="meta job" data-job="${esc(f.jobs.join(", "))}">job ${esc(f.jobs.join(", "))}</div>` : "";
  }

  // Findings by GPU. A MIG GPU instance is diagnosed as an entity of its
  // own ("3/gi2"): its findings go with its GPU's, each naming its instance.
  function findingsByGpu(rep) {
    const out = {};
    for (const h of rep.hosts || []) for (const g of h.gpus || []) {
      const [gpu, gi] = String(g.gpu).split("/");
      const d = (out[gpu] = out[gpu] || { findings: [], waste_gpu_hours: 0 });
      for (const f of g.findings || []) d.findings.push(gi ? { ...f, instance: gi, profile: g.mig && g.mig.profile } : f);
      d.waste_gpu_hours += g.waste_gpu_hours || 0;
    }
    return out;
  }

  // The serving engines of the node (docs/serving.md, "The service line"),
  // from its series as /api/v1/current gives them, as the terminal's
  // service line reads them (src/top/service_lines.cpp): one per endpoint,
  // its model (serving_engine_info), its GPUs by its pid's processes, else
  // all of them when it is the only engine; quantiles from its histograms'
  // counts so far; the findings on its GPUs whose evidence names it.
  function enginesOf(cur, rep) {
    const byPid = {}, engines = {};
    for (const s of (cur.node && cur.node.series) || []) {
      const l = s.labels || {}, v = s.value, name = s.name;
      if (name === "host_gpu_process_affinity_info") { (byPid[l.pid] = byPid[l.pid] || new Set()).add(l.gpu); continue; }
      if (!name.startsWith("serving_") || !l.endpoint) continue;
      const e = (engines[l.endpoint] = engines[l.endpoint] || { endpoint: l.endpoint, kind: l.engine, e2e: [], ttft: [] });
      e.pid = e.pid || l.pid;
      const lab = (n) => l[n];
      const le = s.part === "bucket" ? l.le : null;
      const bound = le === "+Inf" ? Infinity : le == null ? null : Number(le);
      if (name === "serving_engine_info") e.model = lab("model");
      if (name === "serving_kv_cache_usage_ratio") e.kv = v;
      if (name === "serving_requests_waiting") e.waiting = v;
      if (name === "serving_requests_running") e.running = v;
      if (name === "serving_requests_waiting_by_reason" && lab("reason") === "capacity") e.forCapacity = v;
      if (name === "serving_prefix_cache_hit_ratio") e.prefix = v;
      if (name === "serving_batch_max_tokens") e.batchTokens = v;
      if (bound != null && name === "serving_request_latency_seconds") e.e2e.push([bound, v]);
      if (bound != null && name === "serving_time_to_first_token_seconds") e.ttft.push([bound, v]);
    }
    const list = Object.values(engines).sort((a, b) => (a.endpoint < b.endpoint ? -1 : 1));
    const findings = findingsByGpu(rep);
    for (const e of list) {
      const own = e.pid && byPid[e.pid];
      e.gpus = own ? [...own].sort((a, b) => a - b) : list.length === 1 ? cur.gpus.map((g) => String(g.gpu)) : [];
      const q = (b) => quantile(0.99, b.sort((x, y) => x[0] - y[0]));
      e.p99 = q(e.e2e);
      e.ttftP99 = q(e.ttft);
      e.findings = [];
      for (const g of e.gpus) for (const f of (findings[g] || { findings: [] }).findings) {
        if ((f.evidence || []).some((x) => (x.detail || "").includes(" at " + e.endpoint)) && !e.findings.includes(f.cause)) e.findings.push(f.cause);
      }
    }
    return list;
  }
  const secs = (v) => (v == null ? "–" : v < 1 ? Math.round(v * 1000) + " ms" : v.toPrecision(3) + " s");
  const count = (v) => (v == null ? "–" : String(Math.round(v)));
  // One engine on a GPU's card.
  function serviceLineHTML(e) {
    return `<div class="meta service" data-endpoint="${esc(e.endpoint)}">${esc(e.kind)}${e.model ? " " + esc(e.model) : ""} · KV ${pct(e.kv)}${e.prefix != null ? " · prefix hits " + pct(e.prefix) : ""} · ${count(e.waiting)} waiting${e.forCapacity != null ? " (" + count(e.forCapacity) + " for capacity)" : ""} · ${count(e.running)} running${e.batchTokens != null ? " · batch " + count(e.batchTokens) + " tokens" : ""} · p99 ${secs(e.p99)}${e.findings.length ? ` · <span class="cause">${esc(e.findings.join(", "))}</span>` : ""}</div>`;
  }
  // The service view: every engine of the node.
  function servicesHTML(engines) {
    if (!engines.length) return "";
    const rows = engines.map((e) => `<tr data-endpoint="${esc(e.endpoint)}"><td>${esc(e.kind)}</td><td>${esc(e.model || "–")}</td>
      <td>${esc(e.endpoint)}</td><td>${e.gpus.length ? esc(e.gpus.join(",")) : "not known"}</td>
      <td>${count(e.waiting)} / ${count(e.running)}</td><td>${pct(e.kv)}</td><td>${secs(e.p99)} / ${secs(e.ttftP99)}</td>
      <td class="finding-cause">${e.findings.length ? esc(e.findings.join(", ")) : "none"}</td></tr>`).join("");
    return `<section id="services"><h2>services</h2><table><tr><th>engine</th><th>model</th><th>endpoint</th><th>GPUs</th>
      <th>waiting / running</th><th>KV cache</th><th>p99 / TTFT p99</th><th>finding</th></tr>${rows}</table></section>`;
  }

  function sparkline(values, max) {
    const pts = values.map((v, i) => (v == null ? null : [i, v])).filter(Boolean);
    if (pts.length < 2) return `<svg class="spark" viewBox="0 0 100 22"></svg>`;
    const n = values.length - 1 || 1;
    const top = max || Math.max(...pts.map((p) => p[1]), 1e-9);
    const d = pts.map((p) => `${((p[0] / n) * 100).toFixed(1)},${(21 - (Math.min(p[1], top) / top) * 20).toFixed(1)}`).join(" ");
    return `<svg class="spark" viewBox="0 0 100 22" preserveAspectRatio="none"><polyline fill="none" stroke="var(--accent)" stroke-width="1.2" vector-effect="non-scaling-stroke" points="${d}"/></svg>`;
  }

  function findingHTML(f) {
    const since = f.since ? new Date(f.since).toLocaleTimeString() : "";
    return `<li class="finding ${esc(f.severity)}" data-cause="${esc(f.cause)}">
      <span class="cause">${esc(f.cause)}</span> <span class="sev ${esc(f.severity)}">${esc(f.severity)}</span>
      ${f.instance ? `<span class="instance" data-instance="${esc(f.instance)}">MIG ${esc(f.instance)}${f.profile ? " " + esc(f.profile) : ""}</span>` : ""}
      ${f.state && f.state !== "firing" ? `<span class="muted">${esc(f.state)}</span>` : ""}
      <div class="meta">${esc(f.layer || "")} · since ${esc(since)}${f.waste_gpu_hours ? ` · waste ${f.waste_gpu_hours.toFixed(2)} GPU-h` : ""}</div>
      ${f.explained_by ? `<div class="explained" data-root="${esc((f.explained_by.host || "") + "/" + f.explained_by.gpu)}">${esc(f.explained_by.why || `from ${f.explained_by.cause} on GPU ${f.explained_by.gpu}`)}</div>` : ""}
      <div>${esc(f.action || "")}</div>${profileHTML(f.profile)}</li>`;
  }

  // The capture the agent took for a finding (diagnose.profile_on): the top
  // ops/kernels or frames with their shares, or why there is none.
  function profileHTML(p) {
    if (!p) return "";
    const head = `${esc(p.kind)} capture${p.capture ? " " + esc(p.capture) : ""} in pid ${esc(p.pid)}`;
    if (p.state !== "done") return `<div class="profile" data-state="${esc(p.state)}">${head}: ${esc(p.state === "requested" ? "running" : p.summary || p.state)}</div>`;
    const of = { kernels: "of GPU kernel time", cpu_ops: "of CPU op self time", frames: "of main-thread samples" }[p.of] || "";
    return `<div class="profile" data-state="done" data-of="${esc(p.of || "")}">${head}: ${esc(p.summary)}
      <table class="profile-top">${(p.top || []).map((t) => `<tr><td>${esc(t.name)}</td><td class="num">${(100 * t.share).toFixed(1)} %</td></tr>`).join("")}</table>
      <span class="muted">shares ${of}</span></div>`;
  }

  async function overview() {
    const [cur, rep, hist] = await Promise.all([
      getJSON("/api/v1/current"),
      getJSON("/api/v1/findings").catch(() => ({ hosts: [] })),
      getJSON("/api/v1/history?series=gpu_sm_active_ratio,gpu_mem_bandwidth_util_ratio,gpu_pcie_rx_bandwidth_util_ratio,gpu_temperature_celsius&range=5m"),
    ]);
    header(cur);
    const diag = findingsByGpu(rep);
    const engines = enginesOf(cur, rep);
    const spark = {};
    for (const s of hist.series) if (!labelText(s.labels)) spark[s.gpu + "/" + s.name] = s.values;
    const sp = (g, n, max) => sparkline(spark[g + "/" + n] || [], max);
    const cards = cur.gpus.map((g) => {
      const f = fieldsOf(g);
      const d = diag[g.gpu] || { findings: [] };
      const link = f.gpu_pcie_link_generation ? `G${f.gpu_pcie_link_generation}x${f.gpu_pcie_link_width}` : "";
      return `<a class="card" href="#/gpu/${esc(g.gpu)}" data-gpu="${esc(g.gpu)}" aria-label="GPU ${esc(g.gpu)}">
        <h2>GPU ${esc(g.gpu)} <small>${esc(g.name)}</small></h2>
        ${jobHTML(f)}
        ${engines.filter((e) => e.gpus.includes(String(g.gpu))).map(serviceLineHTML).join("")}
        <div class="row"><span class="k">compute</span>${sp(g.gpu, "gpu_sm_active_ratio", 1)}<span class="v">SM ${pct(f.gpu_sm_active_ratio)} · occ ${pct(f.gpu_sm_occupancy_ratio)}</span></div>
        <div class="row"><span class="k">memory</span>${sp(g.gpu, "gpu_mem_bandwidth_util_ratio", 1)}<span class="v">${gib(f.gpu_memory_used_bytes)}/${gib(f.gpu_memory_total_bytes)} G · BW ${pct(f.gpu_mem_bandwidth_util_ratio)}</span></div>
        <div class="row"><span class="k">io</span>${sp(g.gpu, "gpu_pcie_rx_bandwidth_util_ratio", 1)}<span class="v">PCIe ${pct(f.gpu_pcie_rx_bandwidth_util_ratio)}/${pct(f.gpu_pcie_tx_bandwidth_util_ratio)} ${esc(link)}</span></div>
        <div class="row"><span class="k">health</span>${sp(g.gpu, "gpu_temperature_celsius", 100)}<span class="v">${f.gpu_power_watts != null ? Math.round(f.gpu_power_watts) + " W" : "–"} · ${f.gpu_temperature_celsius != null ? Math.round(f.gpu_temperature_celsius) + " °C" : "–"}</span></div>
        ${(f.reasons || []).length ? `<div class="meta muted">clocks cut: ${esc(f.reasons.join(", "))}</div>` : ""}
        ${d.findings.length ? `<ul class="findings">${d.findings.map(findingHTML).join("")}</ul>` : `<div class="healthy">no findings</div>`}
        ${d.waste_gpu_hours ? `<div class="muted">waste ${d.waste_gpu_hours.toFixed(2)} GPU-h over the window</div>` : ""}
      </a>`;
    });
    const byCause = (rep.waste && rep.waste.by_cause) || {};
    const waste = Object.entries(byCause).map(([c, w]) => `${esc(c)} ${Number(w.gpu_hours || 0).toFixed(2)} GPU-h`).join(" · ");
    $("#main").innerHTML = `<h1 class="sr">${cur.gpus.length} GPUs</h1>
      ${waste ? `<p class="muted">waste by cause: ${waste}</p>` : ""}
      <div class="grid" id="gpus">${cards.join("")}</div>
      ${servicesHTML(engines)}`;
  }

  function chart(el, title, xs, series, opts) {
    const data = [xs, ...series.map((s) => s.values)];
    const width = Math.max(300, el.clientWidth - 16);
    const dim = getComputedStyle(document.documentElement).getPropertyValue("--dim").trim() || "#9aa4b1";
    const u = new uPlot({
      width, height: 200, title: undefined,
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: true } },
      axes: [{ stroke: dim, grid: { stroke: "rgba(128,128,128,.15)" } }, { stroke: dim, grid: { stroke: "rgba(128,128,128,.15)" }, size: 60 }],
      series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: s.color || COLORS[i % COLORS.length], width: s.dash ? 1.5 : 1.2, dash: s.dash, spanGaps: false }))],
      hooks: opts && opts.held ? { drawClear: [(u) => {
        const [a, b] = opts.held;
        const x0 = u.valToPos(a, "x", true), x1 = u.valToPos(b, "x", true);
        u.ctx.save(); u.ctx.fillStyle = "rgba(210,153,34,.15)";
        u.ctx.fillRect(Math.max(x0, u.bbox.left), u.bbox.top, Math.min(x1, u.bbox.left + u.bbox.width) - Math.max(x0, u.bbox.left), u.bbox.height);
        u.ctx.restore();
      }] } : {},
    }, data, el);
    charts.push(u);
    return u;
  }

  async function gpuPage(gpu) {
    const names = [...new Set(LAYERS.flatMap((l) => l.series))];
    const [cur, rep, hist] = await Promise.all([
      getJSON("/api/v1/current?gpu=" + encodeURIComponent(gpu)),
      getJSON("/api/v1/findings").catch(() => ({ hosts: [] })),
      getJSON(`/api/v1/history?series=${names.join(",")}&gpu=${encodeURIComponent(gpu)}&range=${state.range}`),
    ]);
    header(cur);
    const g = cur.gpus[0];
    const f = fieldsOf(g);
    const d = findingsByGpu(rep)[gpu] || { findings: [] };
    const xs = hist.series.length ? hist.series[0].values.map((_, i) => (hist.start + i * hist.step) / 1000) : [];
    const by = {};
    for (const s of hist.series) (by[s.name] = by[s.name] || []).push(s);
    // Several series of one name (NVLink links): their mean.
    const one = (name) => {
      const list = by[name] || [];
      if (list.length <= 1) return list[0] ? list[0].values : null;
      return list[0].values.map((_, i) => { const v = list.map((s) => s.values[i]).filter((x) => x != null); return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null; });
    };
    const procs = (g.series || []).filter((s) => s.name === "gpu_process_memory_used_bytes");
    const peak = (g.series || []).filter((s) => s.name === "gpu_pcie_peak_bytes_per_second");
    $("#main").innerHTML = `<p><a href="#/">← all GPUs</a></p>
      <h1>GPU ${esc(g.gpu)} <small class="muted">${esc(g.name)} · ${esc(g.uuid)}</small></h1>
      ${jobHTML(f)}
      <div class="ranges" role="group" aria-label="time range">${["5m", "30m", "1h"].map((r) =>
        `<button type="button" data-range="${r}" aria-pressed="${r === state.range}">${r}</button>`).join("")}
        <span class="muted">drag on a chart to zoom, double-click to reset</span></div>
      <section><h2>findings</h2>${d.findings.length ? `<ul class="findings">${d.findings.map(findingHTML).join("")}</ul>` : `<p class="healthy">no findings</p>`}
        <div class="charts" id="evidence"></div></section>
      <section><h2>layers</h2><div class="charts" id="layers"></div></section>
      <section class="facts">
        <div><h2>link</h2><table>
          <tr><th>PCIe</th><td>Gen${f.gpu_pcie_link_generation ?? "?"} x${f.gpu_pcie_link_width ?? "?"} (max Gen${f.gpu_pcie_link_generation_max ?? "?"} x${f.gpu_pcie_link_width_max ?? "?"})</td></tr>
          ${peak.map((s) => `<tr><th>peak ${esc(s.labels.basis || "")}</th><td>${(s.value / 1e9).toFixed(1)} GB/s</td></tr>`).join("")}
        </table></div>
        <div><h2>processes</h2>${procs.length ? `<table id="procs"><tr><th>process</th><th>memory</th></tr>${procs.map((s) =>
          `<tr><td>${esc(labelText(s.labels))}</td><td>${gib(s.value)} GiB</td></tr>`).join("")}</table>` : `<p class="muted">none reported</p>`}</div>
      </section>`;
    for (const b of document.querySelectorAll("[data-range]")) b.onclick = () => { state.range = b.dataset.range; route(); };
    charts.forEach((c) => c.destroy());
    charts = [];
    for (const layer of LAYERS) {
      const el = document.createElement("div");
      el.className = "chart";
      el.dataset.layer = layer.name;
      el.innerHTML = `<h3>${layer.name}</h3>`;
      $("#layers").appendChild(el);
      const ss = layer.series.map((n) => ({ label: n, values: one(n) })).filter((s) => s.values);
      if (ss.length) chart(el, layer.name, xs, ss);
    }
    // Each evidence as the diagnosis judged it: its series over the
    // diagnosis window, computed by the agent (the findings' "series").
    for (const fd of d.findings) {
      if (fd.instance) continue;  // a MIG instance's evidence is its gpu_mig_* series, not the GPU's charted here
      for (const ev of fd.evidence || []) {
        const s = ev.series;
        if (!s || !Array.isArray(s.t) || !Array.isArray(s.v) || !s.v.some((v) => v != null)) {
          // No chart (a fact, or no series in the history): the value as text.
          const p = document.createElement("p");
          p.className = "evidence-value";
          p.dataset.signal = ev.signal;
          p.textContent = `${fd.cause}: ${ev.signal} ${Number(ev.value).toPrecision(3)} against threshold ${ev.threshold}${ev.detail ? " (" + ev.detail + ")" : ""}`;
          $("#evidence").appendChild(p);
          continue;
        }
        const el = document.createElement("div");
        el.className = "chart evidence";
        el.dataset.signal = ev.signal;
        el.dataset.threshold = ev.threshold;
        el.innerHTML = `<h3>${esc(fd.cause)}: ${esc(ev.signal)} (held ${Math.round(fd.held_seconds || 0)} s; mean ${Number(ev.value).toPrecision(3)} against threshold ${ev.threshold})</h3>`;
        $("#evidence").appendChild(el);
        const ts = s.t.map((t) => t / 1000);
        const end = ts[ts.length - 1];
        chart(el, ev.signal, ts, [{ label: ev.signal, values: s.v }, { label: "threshold", values: ts.map(() => ev.threshold), color: "#f85149", dash: [6, 4] }],
          { held: [end - (fd.held_seconds || 0), end] });
      }
    }
  }

  async function route() {
    clearTimeout(timer);
    const m = location.hash.match(/^#\/gpu\/([^/]+)$/);
    try {
      if (m) await gpuPage(decodeURIComponent(m[1]));
      else { charts.forEach((c) => c.destroy()); charts = []; await overview(); }
    } catch (e) {
      $("#main").innerHTML = `<p class="finding critical">cannot read the agent: ${esc(e.message)}</p>`;
    }
    if (!m) timer = setTimeout(route, 5000);  // the GPU page keeps its zoom; reload or pick a range to refresh
  }

  $("#theme").onclick = () => theme(true);
  theme(false);
  addEventListener("hashchange", () => { route(); $("#main").focus(); });
  getJSON("/api/v1/current").then((c) => { $("#host").textContent = c.gpus.length + " GPUs"; }).catch(() => {});
  route();
})();
