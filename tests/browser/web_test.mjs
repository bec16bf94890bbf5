// Drives Debian's chromium (playwright-core, locked) against a running agent:
//   node web_test.mjs http://127.0.0.1:PORT [SCREENSHOT_DIR]
// The agent runs the thermal-throttle-one-gpu scenario with prefilled history
// (and SERVING_URL, when set, kernel-launch-bound-inference; SERVICES_URL,
// two-engines).
// Every request to another host is blocked (and counted): the page must render
// from the agent alone. Exits 1 with the reason on the first failed check.
import { chromium } from "playwright-core";

const base = process.argv[2];
const shots = process.argv[3];
const fail = (msg) => { console.error("FAIL: " + msg); process.exit(1); };
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--no-sandbox"] });
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, colorScheme: "dark" });
  const page = await context.newPage();
  const origins = [base, process.env.SERVING_URL, process.env.SERVICES_URL].filter(Boolean).map((u) => new URL(u).origin);
  const foreign = [];
  await context.route("**/*", (route) => {
    if (origins.includes(new URL(route.request().url()).origin)) return route.continue();
    foreign.push(route.request().url());
    return route.abort();
  });
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));

  await page.goto(base + "/", { waitUntil: "load" });
  await page.waitForSelector("#gpus .card", { timeout: 10000 });
  const cards = await page.$$eval("#gpus .card", (els) => els.map((e) => e.dataset.gpu));
  if (cards.join(",") !== "0,1,2,3,4,5,6,7") fail("overview shows GPUs " + cards.join(","));
  if (await page.isHidden("#banner")) fail("no SIMULATED banner");
  const flagged = await page.$$eval("#gpus .card", (els) => els.filter((e) => e.querySelector('[data-cause="thermal_throttle"]')).map((e) => e.dataset.gpu));
  if (flagged.join(",") !== "5") fail("thermal_throttle shown on GPUs [" + flagged.join(",") + "], expected 5 only");
  const sparks = await page.$$eval("#gpus .card polyline", (els) => els.length);
  if (sparks < 8) fail("only " + sparks + " sparklines drawn");
  // Keyboard: the cards are links, reachable with Tab.
  const tabbable = await page.$$eval("#gpus .card", (els) => els.every((e) => e.tabIndex >= 0));
  if (!tabbable) fail("cards are not keyboard-focusable");
  if (shots) await page.screenshot({ path: shots + "/web-overview.png" });

  // Click GPU 5: its charts.
  await page.click('#gpus .card[data-gpu="5"]');
  await page.waitForSelector("#layers .chart canvas", { timeout: 10000 });
  const layers = await page.$$eval("#layers .chart", (els) => els.filter((e) => e.querySelector("canvas")).map((e) => e.dataset.layer));
  if (layers.join(",") !== "compute,memory,io,health") fail("GPU page charts: " + layers.join(","));
  const ev = await page.$$eval("#evidence .chart", (els) => els.map((e) => ({
    signal: e.dataset.signal, threshold: e.dataset.threshold,
    legend: [...e.querySelectorAll(".u-legend .u-series .u-label")].map((l) => l.textContent) })));
  const temp = ev.find((e) => e.signal === "temperature");
  if (!temp) fail("no temperature evidence chart: " + JSON.stringify(ev));
  if (!temp.legend.includes("threshold") || temp.threshold !== "80") fail("the evidence chart lacks its threshold: " + JSON.stringify(temp));
  // The chart is the series the agent judged, sent with the finding: times
  // and values, bounded (600 points), not recomputed from the history.
  const judged = (await (await page.request.get(base + "/api/v1/findings")).json()).hosts[0].gpus
    .find((g) => String(g.gpu) === "5").findings[0].evidence.find((e) => e.signal === "temperature");
  const js = judged && judged.series;
  if (!js || !js.t.length || js.t.length !== js.v.length || js.t.length > 600 || !js.v.some((v) => v >= 80)) {
    fail("the temperature evidence carries no bounded series over its threshold: " + JSON.stringify(js).slice(0, 200));
  }
  // A range button re-reads the history.
  await page.click('[data-range="5m"]');
  await page.waitForSelector('[data-range="5m"][aria-pressed="true"]', { timeout: 10000 });
  await page.waitForSelector("#layers .chart canvas", { timeout: 10000 });
  if (shots) {
    await page.click('[data-range="30m"]');
    await page.waitForSelector('[data-range="30m"][aria-pressed="true"]');
    await page.waitForSelector("#evidence .chart canvas");
    await page.screenshot({ path: shots + "/web-gpu.png", fullPage: true });
  }
  // Light theme toggles.
  await page.click("#theme");
  if (!(await page.evaluate(() => document.documentElement.classList.contains("light")))) fail("the theme button does not switch to light");

  // A MIG GPU instance is an entity of its own in the findings ("3/gi2"):
  // its finding shows on GPU 3's card and page, naming the instance; no card
  // of its own. The agent's answer, with such an entity added.
  const real = await (await page.request.get(base + "/api/v1/findings")).json();
  const thermal = real.hosts[0].gpus.find((g) => String(g.gpu) === "5").findings[0];
  real.hosts[0].gpus.push({ gpu: "3/gi2", uuid: "GPU-x", mig: { gpu: "3", gpu_instance: "2", profile: "3g.71gb", uuid: "MIG-x" },
    findings: [{ ...thermal, cause: "memory_fragmentation", action: "fragmented allocator in the instance" }], waste_gpu_hours: 0 });
  await page.route("**/api/v1/findings", (r) => r.fulfill({ json: real }));
  await page.goto(base + "/#/", { waitUntil: "load" });
  await page.waitForSelector('#gpus .card[data-gpu="3"] [data-cause="memory_fragmentation"]', { timeout: 10000 });
  const withMig = await page.$$eval("#gpus .card", (els) => els.map((e) => e.dataset.gpu));
  if (withMig.join(",") !== "0,1,2,3,4,5,6,7") fail("a MIG instance got a card of its own: " + withMig.join(","));
  const inst = await page.$eval('#gpus .card[data-gpu="3"] [data-cause="memory_fragmentation"] .instance', (e) => e.textContent);
  if (inst !== "MIG gi2 3g.71gb") fail("the instance's finding does not name it: " + inst);
  await page.click('#gpus .card[data-gpu="3"]');
  await page.waitForSelector('#main [data-cause="memory_fragmentation"] [data-instance="gi2"]', { timeout: 10000 });
  await page.unroute("**/api/v1/findings");

  // The job of each GPU (gpu_job_info, docs/jobs.md) on its card and page,
  // two jobs claiming one GPU both shown; a finding explained by another
  // GPU says whom it waits for. The agent's answers, with those added.
  const cur = await (await page.request.get(base + "/api/v1/current")).json();
  const gpuOf = (n) => cur.gpus.find((g) => String(g.gpu) === n);
  const job = (g, labels) => gpuOf(g).series.push({ name: "gpu_job_info", labels, value: 1 });
  job("2", { job_id: "81234", source: "slurm", rank: "2", world_size: "16" });
  job("6", { job_id: "81234", source: "slurm", rank: "6" });
  job("6", { job_id: "<b>x</b>", source: "environment" });
  const currentUrl = /\/api\/v1\/current(\?|$)/;
  await page.route(currentUrl, (r) => {
    const one = new URL(r.request().url()).searchParams.get("gpu");
    r.fulfill({ json: one ? { ...cur, gpus: cur.gpus.filter((g) => String(g.gpu) === one) } : cur });
  });
  const explained = await (await page.request.get(base + "/api/v1/findings")).json();
  explained.hosts[0].gpus.find((g) => String(g.gpu) === "2").findings.push({ ...thermal, cause: "small_batch",
    explained_by: { host: "trn-k02", gpu: "5", cause: "thermal_throttle", why: "waiting for GPU 5 of trn-k02 (thermal_throttle)" } });
  await page.route("**/api/v1/findings", (r) => r.fulfill({ json: explained }));
  await page.goto(base + "/#/", { waitUntil: "load" });
  await page.waitForSelector('#gpus .card[data-gpu="2"] .job', { timeout: 10000 });
  const jobs = await page.$$eval("#gpus .card", (els) => els.map((e) => [e.dataset.gpu, (e.querySelector(".job") || {}).textContent || ""]));
  const jobOf = Object.fromEntries(jobs);
  if (jobOf["2"] !== "job 81234 rank 2") fail("GPU 2's job reads " + JSON.stringify(jobOf["2"]));
  if (jobOf["6"] !== "job 81234 rank 6, <b>x</b>") fail("GPU 6's two jobs read " + JSON.stringify(jobOf["6"]));
  if (jobs.filter(([, j]) => j).length !== 2) fail("jobs shown on GPUs without one: " + JSON.stringify(jobs));
  const why = await page.$eval('#gpus .card[data-gpu="2"] [data-cause="small_batch"] .explained', (e) => e.textContent);
  if (why !== "waiting for GPU 5 of trn-k02 (thermal_throttle)") fail("the explained finding reads " + why);
  await page.click('#gpus .card[data-gpu="2"]');
  await page.waitForSelector("#main h1 + .job", { timeout: 10000 });
  const pageJob = await page.$eval("#main h1 + .job", (e) => e.textContent);
  if (pageJob !== "job 81234 rank 2") fail("GPU 2's page shows the job " + pageJob);
  await page.unroute(currentUrl);
  await page.unroute("**/api/v1/findings");

  // Evidence of the host (CPU busy, PSI) and of the GPU is charted from the
  // series its finding carries; a fact with no series (the topology path)
  // is shown as its value. The agent's answer, with such a finding added.
  const withHost = await (await page.request.get(base + "/api/v1/findings")).json();
  const ts = thermal.evidence.find((e) => e.signal === "temperature").series.t;
  const series = (v) => ({ t: ts, v: ts.map(() => v) });
  withHost.hosts[0].gpus.find((g) => String(g.gpu) === "5").findings.push({ ...thermal, cause: "input_pipeline", evidence: [
    { signal: "sm_active", value: 0.2, threshold: 0.5, series: series(0.2) }, { signal: "host_cpu_busy", value: 0.95, threshold: 0.9, series: series(0.95) },
    { signal: "psi_cpu", value: 0.4, threshold: 0.3, series: series(0.4) },
    { signal: "gpu_topology_path", value: 4, threshold: 3, detail: "path SYS to GPU 4, both used by pid 42" }] });
  await page.route("**/api/v1/findings", (r) => r.fulfill({ json: withHost }));
  await page.goto(base + "/#/gpu/5", { waitUntil: "load" });
  await page.waitForSelector('#evidence .evidence-value[data-signal="gpu_topology_path"]', { timeout: 10000 });
  const drawn = await page.$$eval("#evidence .chart", (els) => els.filter((e) => e.querySelector("canvas")).map((e) => e.dataset.signal));
  for (const sig of ["temperature", "sm_active", "host_cpu_busy", "psi_cpu"]) {
    if (!drawn.includes(sig)) fail(`no ${sig} evidence chart: ${drawn.join(",")}`);
  }
  if (drawn.includes("gpu_topology_path")) fail("the topology path, a fact, got a chart");
  const text = await page.$eval('#evidence .evidence-value[data-signal="gpu_topology_path"]', (e) => e.textContent);
  if (!text.includes("path SYS to GPU 4")) fail("the topology evidence does not show its value: " + text);
  await page.unroute("**/api/v1/findings");

  // SERVING_URL: an agent on the kernel-launch-bound-inference scenario,
  // whose kernel_launch finding judges the latency p99 the agent derives
  // from its latency histogram; the page draws the series the finding
  // carries (0.29 s there, against 0.17 s).
  if (process.env.SERVING_URL) {
    await page.goto(process.env.SERVING_URL + "/#/gpu/0", { waitUntil: "load" });
    const sel = '#evidence .chart[data-signal="latency_p99"]';
    await page.waitForSelector(sel + " canvas", { timeout: 10000 });
    const box = await (await page.$(sel + " .u-over")).boundingBox();
    await page.mouse.move(box.x + box.width * 0.9, box.y + box.height / 2);
    const legend = await page.$$eval(sel + " .u-legend .u-series", (els) => els.map((e) => e.textContent));
    const p99 = Number((legend.find((l) => l.startsWith("latency_p99")) || "").slice("latency_p99".length));
    if (!(p99 > 0.2 && p99 < 0.4)) fail("the latency p99 chart from the histogram reads " + JSON.stringify(legend));
  }

  // SERVICES_URL: an agent on the two-engines scenario. Each engine's
  // service line on its own GPUs' cards (its model named), and the service
  // view listing both engines with their GPUs and the summariser's finding.
  if (process.env.SERVICES_URL) {
    await page.goto(process.env.SERVICES_URL + "/#/", { waitUntil: "load" });
    await page.waitForSelector("#services tr[data-endpoint]", { timeout: 10000 });
    const rows = await page.$$eval("#services tr[data-endpoint]", (els) => els.map((e) => [...e.querySelectorAll("td")].map((td) => td.textContent.trim())));
    if (rows.length !== 2) fail("the service view lists " + rows.length + " engines: " + JSON.stringify(rows));
    const [chat, summ] = rows;
    if (chat[0] !== "vllm" || chat[1] !== "meta-llama/Llama-3.1-8B-Instruct" || !chat[2].endsWith(":8000/metrics") || chat[3] !== "0,1,2,3" || chat[7] !== "none") {
      fail("the chat engine's row reads " + JSON.stringify(chat));
    }
    if (summ[1] !== "Qwen/Qwen2.5-32B-Instruct" || summ[3] !== "4,5,6,7" || !summ[7].includes("kv_cache_pressure") || !(/^\d+%$/.test(summ[5]) && parseInt(summ[5], 10) >= 90 && parseInt(summ[5], 10) <= 100)) {
      fail("the summariser's row reads " + JSON.stringify(summ));
    }
    const lines = await page.$$eval("#gpus .card", (els) => els.map((e) => [e.dataset.gpu, [...e.querySelectorAll(".service")].map((s) => s.textContent)]));
    for (const [gpu, svc] of lines) {
      const want = Number(gpu) < 4 ? "vllm meta-llama/Llama-3.1-8B-Instruct" : "vllm Qwen/Qwen2.5-32B-Instruct";
      if (svc.length !== 1 || !svc[0].startsWith(want)) fail(`GPU ${gpu}'s service line reads ${JSON.stringify(svc)}`);
      if ((Number(gpu) >= 4) !== svc[0].includes("kv_cache_pressure")) fail(`GPU ${gpu}'s service line and finding: ${svc[0]}`);
    }
    if (shots) await page.screenshot({ path: shots + "/web-services.png", fullPage: true });
  }

  if (errors.length) fail("console errors: " + errors.join(" | "));
  if (foreign.length) fail("requests left the agent: " + foreign.join(", "));
  console.log("PASS: 8 GPUs, thermal_throttle on GPU 5 only, charts, threshold, keyboard, a MIG instance's finding on its GPU, each GPU's job and whom a finding waits for, host and GPU evidence charted, a fact as text, latency p99 from the histogram, each engine's service line and the service view, no console errors, no foreign request");
} finally {
  await browser.close();
}
