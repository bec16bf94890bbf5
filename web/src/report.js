// The offline HTML reports of `gpulens diagnose --format html` and
// `gpulens trace --format html`: the data is inlined in the file
// (<script type="application/json" id="gpulens-data">) and drawn with uPlot,
// inlined too. Nothing is fetched from anywhere.
(function () {
  "use strict";
  const $ = (sel) => document.querySelector(sel);
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  const fix = (v, d) => (v == null || isNaN(v) ? "–" : Number(v).toFixed(d));
  const ms = (us) => fix(us / 1000, 2) + " ms";
  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  const COLORS = ["#5aa9ff", "#3fb950", "#d29922", "#bc8cff", "#f85149", "#39c5cf", "#ff9bce", "#8b949e"];
  const data = JSON.parse($("#gpulens-data").textContent);
  const main = $("#report");

  function chart(el, title, xs, series, opts) {
    const axis = { stroke: css("--dim"), grid: { stroke: css("--line") }, ticks: { stroke: css("--line") } };
    const u = new uPlot({
      title, width: Math.min(560, Math.max(360, main.clientWidth / 2 - 20)), height: 220,
      scales: { x: { time: opts.time !== false } },
      series: [{}].concat(series.map((s, i) => ({ label: s.label, stroke: s.color || COLORS[i % COLORS.length], width: s.width || 1.5, dash: s.dash, fill: s.fill, paths: s.paths }))),
      axes: [axis, axis],
      hooks: opts.hooks || {},
    }, [xs].concat(series.map((s) => s.values)), el);
    return u;
  }

  // Stacked bars over named categories (ranks, streams, kernel types): the
  // parts are drawn as cumulative bars, the last part's first, so each shows
  // as its own segment; the legend lists them top of the stack first and
  // shows each part's own value.
  function stacked(el, title, categories, parts) {
    const xs = categories.map((_, i) => i);
    const bars = uPlot.paths.bars({ size: [0.6, 80] });
    const sums = parts.map((_, k) => xs.map((i) => parts.slice(0, k + 1).reduce((a, p) => a + (p.values[i] || 0), 0)));
    const order = parts.map((_, k) => k).reverse();
    const axis = { stroke: css("--dim"), grid: { stroke: css("--line") }, ticks: { stroke: css("--line") } };
    return new uPlot({
      title, width: Math.min(560, Math.max(360, main.clientWidth / 2 - 20)), height: 240,
      scales: { x: { time: false, range: [-0.5, categories.length - 0.5] } },
      series: [{ label: "", value: (u, v) => (v == null ? "" : categories[v] ?? "") }].concat(order.map((k) => ({
        label: parts[k].label, stroke: COLORS[k % COLORS.length], fill: COLORS[k % COLORS.length] + "aa", width: 1, paths: bars,
        points: { show: false }, value: (u, v, si, i) => (i == null ? "--" : fix(parts[k].values[i], 2)) }))),
      axes: [Object.assign({ splits: () => xs, values: (u, splits) => splits.map((i) => String(categories[i] ?? "").slice(0, 14)) }, axis), axis],
    }, [xs].concat(order.map((k) => sums[k])), el);
  }

  // The capture attached to a finding (diagnose.profile_on).
  function profile(p) {
    if (!p) return "";
    const head = `<b>profile</b>: ${esc(p.kind)} capture${p.capture ? " " + esc(p.capture) : ""} in pid ${esc(p.pid)} (${esc(p.state)}, ${esc(p.at)})`;
    if (p.state !== "done") return `<div class="profile" data-state="${esc(p.state)}">${head}: ${esc(p.summary || "not finished yet")}</div>`;
    const of = { kernels: "GPU kernel time", cpu_ops: "CPU op self time", frames: "main-thread samples" }[p.of] || "";
    return `<div class="profile" data-state="done" data-of="${esc(p.of || "")}">${head}: ${esc(p.summary)}
      <table class="profile-top"><tr><th>${p.of === "frames" ? "frame" : p.of === "kernels" ? "kernel" : "op"}</th><th class="num">share of ${esc(of)}</th></tr>${(p.top || []).map((t) =>
        `<tr><td>${esc(t.name)}</td><td class="num">${fix(100 * t.share, 1)} %</td></tr>`).join("")}</table></div>`;
  }

  // ---- diagnose ---------------------------------------------------------
  function diagnose() {
    const rep = data.report;
    const ev = data.evidence || [];
    const when = (t) => new Date(t).toISOString().replace(".000Z", "Z");
    let html = `<h1>gpulens diagnose</h1><p class="muted">${esc(data.source)} · window ${esc(rep.window ? rep.window.from + " – " + rep.window.to : "")}</p>`;
    // The jobs first, as in the text report: each job with a root cause or a
    // hang, and every job from a real job source, up to 20; a count of the rest.
    const shown = [], rest = [];
    for (const j of rep.jobs || []) ((j.root || j.hang || j.source !== "host") && shown.length < 20 ? shown : rest).push(j);
    if (shown.length) {
      const state = (j) => j.root
        ? `${j.root.cause === "hardware_errors" ? "stopped" : "slowed"} by GPU ${esc(j.root.gpu)} of ${esc(j.root.host)}, <b>${esc(j.root.cause)}</b>, since ${esc(j.root.since || "")}`
        : j.hang ? `<b>hung</b> since ${esc(j.hang.since)}${j.hang.first ? ` (the first stuck: GPU ${esc(j.hang.first.gpu)} of ${esc(j.hang.first.host)})` : ""}`
        : "no root cause across the job";
      html += `<h2>Jobs</h2><table id="jobs"><tr><th>job</th><th>source</th><th class="num">GPUs</th><th class="num">hosts</th><th></th><th class="num">GPU-hours lost</th></tr>${shown.map((j) =>
        `<tr data-job="${esc(j.job)}"${j.root ? ` data-root="${esc(j.root.host + "/" + j.root.gpu)}"` : ""}><td>${esc(j.job)}</td><td>${esc(j.source)}</td><td class="num">${j.gpus.length}</td><td class="num">${j.hosts}</td><td>${state(j)}</td><td class="num">${fix(j.waste_gpu_hours, 2)}</td></tr>${(j.notes || []).map((n) => `<tr class="note"><td></td><td colspan="5" class="muted">${esc(n)}</td></tr>`).join("")}`).join("")}</table>`;
      if (rest.length) html += `<p class="muted">${rest.length} other job${rest.length === 1 ? "" : "s"} (${rest.reduce((n, j) => n + j.gpus.length, 0)} GPUs) with no root cause across the job</p>`;
    }
    const waste = (rep.waste && rep.waste.by_cause) || {};
    const causes = Object.entries(waste).map(([c, w]) => [c, w.gpu_hours]).filter(([, h]) => h > 0).sort((a, b) => b[1] - a[1]);
    html += `<h2>Waste by cause</h2>`;
    if (causes.length) {
      const top = causes[0][1];
      html += `<table id="waste"><tr><th>cause</th><th class="num">GPU-hours</th><th></th></tr>${causes.map(([c, h]) =>
        `<tr data-cause="${esc(c)}"><td>${esc(c)}</td><td class="num">${fix(h, 2)}</td><td><span class="bar" style="width:${Math.max(2, 200 * h / top)}px"></span></td></tr>`).join("")}</table>`;
    } else html += `<p>No GPU time lost to a firing cause.</p>`;
    html += `<div id="hosts"></div>`;
    main.innerHTML = html;
    for (const host of rep.hosts) {
      const h = document.createElement("section");
      h.className = "host";
      h.dataset.host = host.host;
      h.innerHTML = `<h2>${esc(host.host)}</h2>`;
      $("#hosts").appendChild(h);
      for (const g of host.gpus) {
        const s = document.createElement("div");
        s.className = "gpu";
        s.dataset.gpu = g.gpu;
        s.innerHTML = `<h3>GPU ${esc(g.gpu)} <span class="muted">${esc(g.model || "")} ${esc(g.uuid || "")} · ${fix(g.waste_gpu_hours, 2)} GPU-h lost</span></h3>` +
          (g.notes || []).map((n) => `<p class="muted note">note: ${esc(n)}</p>`).join("") +
          (g.findings.length ? "" : `<p class="muted">no findings</p>`);
        h.appendChild(s);
        for (const f of g.findings) {
          const d = document.createElement("div");
          d.className = "finding";
          d.dataset.cause = f.cause;
          d.innerHTML = `<div><span class="sev ${esc(f.severity)}">${esc(f.severity.toUpperCase())}</span> <b>${esc(f.cause)}</b>
            <span class="muted">${esc(f.layer)} · ${esc(f.state)} · since ${esc(f.since)} · held ${fix(f.held_seconds / 60, 1)} min · ${fix(f.waste_gpu_hours, 2)} GPU-h</span></div>
            ${f.explained_by ? `<div class="muted">consequence of ${esc(f.explained_by.cause)} on GPU ${esc(f.explained_by.gpu)}: ${esc(f.explained_by.why || "")}</div>` : ""}
            <table>${f.evidence.map((e) => `<tr><td>${esc(e.signal)}</td><td class="num">${fix(e.value, 3)}</td><td class="muted">threshold ${fix(e.threshold, 3)}</td><td class="muted">${esc(e.detail || "")}</td></tr>`).join("")}</table>
            <p>${esc(f.action)}</p>${profile(f.profile)}<div class="charts"></div>`;
          s.appendChild(d);
          const periods = (f.periods || []).map((p) => [Date.parse(p.from) / 1000, Date.parse(p.to) / 1000]);
          for (const e of ev.filter((x) => x.host === host.host && x.gpu === g.gpu && x.cause === f.cause)) {
            const el = document.createElement("div");
            el.className = "chart evidence";
            el.dataset.signal = e.signal;
            el.dataset.threshold = e.threshold;
            d.querySelector(".charts").appendChild(el);
            const xs = e.t.map((t) => t / 1000);
            // The interval where the cause held, shaded under the series.
            const shade = { draw: [(u) => {
              const c = u.ctx;
              c.save();
              c.fillStyle = "rgba(248,81,73,0.15)";
              for (const [a, b] of periods) {
                const x0 = u.valToPos(a, "x", true), x1 = u.valToPos(b, "x", true);
                c.fillRect(x0, u.bbox.top, Math.max(1, x1 - x0), u.bbox.height);
              }
              c.restore();
            }] };
            chart(el, e.signal, xs, [
              { label: e.signal, values: e.v },
              { label: "threshold", values: xs.map(() => e.threshold), color: css("--crit"), dash: [6, 4], width: 1 },
            ], { hooks: shade });
          }
        }
      }
    }
  }

  // ---- trace ------------------------------------------------------------
  function trace() {
    const job = data.trace;
    const ranks = job.ranks || [];
    let html = `<h1>gpulens trace</h1><p class="muted">${ranks.length} rank${ranks.length === 1 ? "" : "s"} · definitions: ${esc(job.compat)}</p>`;
    html += `<h2>Across ranks</h2><table id="ranks"><tr><th>rank</th><th>verdict</th><th class="num">span</th><th class="num">compute</th><th class="num">non-compute</th><th class="num">idle</th><th class="num">overlap</th><th>file</th></tr>${ranks.map((r) =>
      `<tr data-rank="${esc(r.rank)}"><td>${esc(r.rank)}</td><td>${esc(r.verdict ? r.verdict.bound : "")}</td><td class="num">${ms(r.temporal.span_us)}</td><td class="num">${ms(r.temporal.compute_us)}</td><td class="num">${ms(r.temporal.non_compute_us)}</td><td class="num">${ms(r.temporal.idle_us)}</td><td class="num">${r.comm_comp_overlap_pct == null ? "–" : fix(r.comm_comp_overlap_pct, 1) + " %"}</td><td class="muted">${esc(r.file)}</td></tr>`).join("")}</table>`;
    if ((job.stragglers || []).length) html += `<p class="banner">stragglers: ${esc(JSON.stringify(job.stragglers))}</p>`;
    html += `<div class="charts" id="across"></div><div id="per-rank"></div>`;
    main.innerHTML = html;
    stacked($("#across"), "temporal breakdown per rank (ms)", ranks.map((r) => "rank " + r.rank), [
      { label: "compute", values: ranks.map((r) => r.temporal.compute_us / 1000) },
      { label: "non-compute", values: ranks.map((r) => r.temporal.non_compute_us / 1000) },
      { label: "idle", values: ranks.map((r) => r.temporal.idle_us / 1000) },
    ]);
    for (const r of ranks) {
      const s = document.createElement("section");
      s.className = "rank";
      s.dataset.rank = r.rank;
      const idle = r.idle_by_stream || [];
      s.innerHTML = `<h2>Rank ${esc(r.rank)} <span class="muted">${esc(r.file)}</span></h2>
        <p>${esc(r.verdict ? r.verdict.bound + ": " + r.verdict.evidence : "")}</p>
        <h3>Idle by cause, per stream</h3><table class="idle"><tr><th>stream</th><th class="num">host wait</th><th class="num">kernel wait</th><th class="num">other</th></tr>${idle.map((x) =>
          `<tr><td>${esc(x.stream)}</td><td class="num">${ms(x.host_wait_us)}</td><td class="num">${ms(x.kernel_wait_us)}</td><td class="num">${ms(x.other_us)}</td></tr>`).join("")}</table>
        <h3>Kernel types</h3><table class="types">${(r.kernel_types || []).map((k) => `<tr><td>${esc(k.type)}</td><td class="num">${ms(k.us)}</td><td class="num">${fix(k.pct, 1)} %</td></tr>`).join("")}</table>
        <h3>Top kernels</h3><table class="top"><tr><th>kernel</th><th>type</th><th class="num">count</th><th class="num">total</th></tr>${(r.top_kernels || []).map((k) =>
          `<tr><td>${esc(k.name.length > 90 ? k.name.slice(0, 90) + "…" : k.name)}</td><td>${esc(k.type)}</td><td class="num">${esc(k.count)}</td><td class="num">${ms(k.total_us)}</td></tr>`).join("")}</table>
        ${(r.top_cpu_ops || []).length ? `<h3>Top CPU ops by self time</h3><p class="muted">${esc(r.cpu.events)} CPU events on ${esc(r.cpu.threads)} thread${r.cpu.threads === 1 ? "" : "s"}, ${ms(r.cpu.busy_us)} inside them${r.gpu_timeline === false ? " · no GPU timeline in the trace" : ""}</p><table class="cpu-ops"><tr><th>op</th><th class="num">count</th><th class="num">self</th><th class="num">share</th><th class="num">total</th></tr>${r.top_cpu_ops.map((c) =>
          `<tr><td>${esc(c.name.length > 90 ? c.name.slice(0, 90) + "…" : c.name)}</td><td class="num">${esc(c.count)}</td><td class="num">${ms(c.self_us)}</td><td class="num">${r.cpu.busy_us > 0 ? fix(100 * c.self_us / r.cpu.busy_us, 1) + " %" : "–"}</td><td class="num">${ms(c.total_us)}</td></tr>`).join("")}</table>` : ""}
        ${r.launch_delay ? `<p class="muted">launch delay: mean ${ms(r.launch_delay.mean_us)}, p50 ${ms(r.launch_delay.p50_us)}, p95 ${ms(r.launch_delay.p95_us)}, max ${ms(r.launch_delay.max_us)} over ${esc(r.launch_delay.count)} launches</p>` : ""}
        <div class="charts"></div>`;
      $("#per-rank").appendChild(s);
      const types = r.kernel_types || [];
      if (types.length) {
        const el = document.createElement("div");
        el.className = "chart kernel-types";
        s.querySelector(".charts").appendChild(el);
        stacked(el, "kernel types (ms)", types.map((k) => k.type), [
          { label: "time", values: types.map((k) => k.us / 1000) },
        ]);
      }
      if (idle.length) {
        const el = document.createElement("div");
        el.className = "chart idle-causes";
        s.querySelector(".charts").appendChild(el);
        stacked(el, "idle by cause per stream (ms)", idle.map((x) => "stream " + x.stream), [
          { label: "host wait", values: idle.map((x) => x.host_wait_us / 1000) },
          { label: "kernel wait", values: idle.map((x) => x.kernel_wait_us / 1000) },
          { label: "other", values: idle.map((x) => x.other_us / 1000) },
        ]);
      }
    }
  }

  if (data.kind === "diagnose") diagnose();
  else if (data.kind === "trace") trace();
  document.body.dataset.rendered = data.kind;
})();
