// Opens gpulens's offline HTML reports from disk in Debian's chromium
// (playwright-core, locked) and checks what they draw:
//   node report_test.mjs diagnose FILE.html GPU CAUSE   the finding on that GPU only, one chart per
//                                                       plotted evidence signal, each with its threshold;
//                                                       REPORT_JOB=JOB@HOST/GPU: the jobs table first, its root
//   node report_test.mjs trace FILE.html RANKS          a section per rank, the across-ranks and
//                                                       per-rank charts with their series (stacked:
//                                                       the legend lists the top of the stack first)
//   node report_test.mjs trace FILE.html cpu-ops OP     a CPU-only trace: its top CPU ops table, OP first
// Every request is blocked and counted: a report must render from its own
// file. No console error. No script from the data runs (window.__pwned stays
// unset); with REPORT_SHOWS=TEXT the page must show TEXT as text. Exits 1 with the reason on the first failed check.
import { chromium } from "playwright-core";
import { pathToFileURL } from "node:url";

const [kind, file, ...rest] = process.argv.slice(2);
const fail = (msg) => { console.error("FAIL: " + msg); process.exit(1); };
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--no-sandbox"] });
try {
  const context = await browser.newContext({ viewport: { width: 1300, height: 900 } });
  const page = await context.newPage();
  const url = pathToFileURL(file).href;
  const requests = [];
  await context.route("**/*", (route) => {
    if (route.request().url() === url) return route.continue();
    requests.push(route.request().url());
    return route.abort();
  });
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(url, { waitUntil: "load" });
  await page.waitForSelector(`body[data-rendered="${kind}"]`, { timeout: 10000 });
  // Series per chart, from uPlot's legend (the x series excluded).
  const seriesOf = (sel) => page.$$eval(sel, (els) => els.map((e) => ({
    canvas: !!e.querySelector("canvas"),
    labels: [...e.querySelectorAll(".u-legend .u-series .u-label")].map((l) => l.textContent).slice(1) })));

  if (kind === "diagnose") {
    const [gpu, cause] = rest;
    const data = await page.evaluate(() => JSON.parse(document.getElementById("gpulens-data").textContent));
    const flagged = await page.$$eval(`.finding[data-cause="${cause}"]`, (els) => els.map((e) => e.closest(".gpu").dataset.gpu));
    if (flagged.join(",") !== gpu) fail(`${cause} shown on GPUs [${flagged}], expected ${gpu} only`);
    const expected = data.evidence.filter((e) => e.gpu === gpu && e.cause === cause).map((e) => e.signal);
    if (!expected.length) fail("the report carries no evidence series for the finding");
    const charts = await seriesOf(`.gpu[data-gpu="${gpu}"] .finding[data-cause="${cause}"] .chart.evidence`);
    const signals = await page.$$eval(`.gpu[data-gpu="${gpu}"] .finding[data-cause="${cause}"] .chart.evidence`, (els) => els.map((e) => e.dataset.signal));
    if (signals.join(",") !== expected.join(",")) fail(`evidence charts ${signals}, expected ${expected}`);
    for (const [i, c] of charts.entries()) {
      if (!c.canvas) fail(`evidence chart ${signals[i]} not drawn`);
      if (c.labels.length !== 2 || c.labels[0] !== signals[i] || c.labels[1] !== "threshold") fail(`evidence chart ${signals[i]} series: ${c.labels}`);
    }
    const waste = await page.$$eval("#waste tr[data-cause]", (els) => els.map((e) => e.dataset.cause));
    if (!waste.includes(cause)) fail(`waste table lacks ${cause}: ${waste}`);
    // REPORT_JOB=JOB@HOST/GPU: the jobs table comes first and names that root.
    if (process.env.REPORT_JOB) {
      const [job, root] = process.env.REPORT_JOB.split("@");
      const row = await page.$(`#jobs tr[data-job="${job}"]`);
      if (!row) fail(`no row of job ${job} in the jobs table`);
      const got = await row.getAttribute("data-root");
      if (got !== root) fail(`job ${job}'s root reads ${got}, expected ${root}`);
      const first = await page.$eval("h2", (e) => e.textContent);
      if (first !== "Jobs") fail("the jobs table does not come first: " + first);
    }
    console.log(`PASS: ${cause} on GPU ${gpu} only, ${charts.length} evidence charts with their thresholds, waste per cause`);
  } else if (kind === "trace" && rest[0] === "cpu-ops") {
    // A trace without a GPU timeline: its top CPU ops table, the expected op first.
    const op = rest[1];
    const rows = await page.$$eval("section.rank table.cpu-ops tr", (els) => els.slice(1).map((e) => [e.cells[0].textContent, e.cells[3].textContent]));
    if (!rows.length) fail("no top CPU ops table");
    if (rows[0][0] !== op) fail(`first CPU op ${rows[0][0]}, expected ${op}`);
    if (!/^\d+\.\d %$/.test(rows[0][1])) fail(`the first CPU op's share reads ${rows[0][1]}`);
    const note = await page.$eval("section.rank", (e) => e.textContent.includes("no GPU timeline in the trace"));
    if (!note) fail("the CPU-only trace does not say it has no GPU timeline");
    console.log(`PASS: top CPU ops, ${op} first with its share, no GPU timeline said`);
  } else {
    const ranks = Number(rest[0]);
    const sections = await page.$$eval("section.rank", (els) => els.length);
    if (sections !== ranks) fail(`${sections} rank sections, expected ${ranks}`);
    const rows = await page.$$eval("#ranks tr[data-rank]", (els) => els.length);
    if (rows !== ranks) fail(`${rows} rows in the across-ranks table, expected ${ranks}`);
    const across = await seriesOf("#across .uplot");
    if (across.length !== 1 || across[0].labels.join(",") !== "idle,non-compute,compute") fail("across-ranks chart: " + JSON.stringify(across));
    const types = await seriesOf("section.rank .chart.kernel-types");
    if (types.length !== ranks || !types.every((c) => c.canvas && c.labels.length === 1)) fail("kernel-type charts: " + JSON.stringify(types));
    const idle = await seriesOf("section.rank .chart.idle-causes");
    if (!idle.every((c) => c.canvas && c.labels.join(",") === "other,kernel wait,host wait")) fail("idle charts: " + JSON.stringify(idle));
    const top = await page.$$eval("section.rank table.top tr", (els) => els.length);
    if (top < ranks * 2) fail("top kernels missing");
    console.log(`PASS: ${ranks} ranks, across-ranks breakdown, kernel types, idle by cause, top kernels`);
  }
  // Strings from outside (kernel names, labels) are data, never markup: no
  // script of theirs ran, and the text shows as written (REPORT_SHOWS).
  const pwned = await page.evaluate(() => window.__pwned);
  if (pwned !== undefined) fail(`a script from the report's data ran (window.__pwned = ${pwned})`);
  if (process.env.REPORT_SHOWS) {
    const text = await page.evaluate(() => document.body.textContent);
    if (!text.includes(process.env.REPORT_SHOWS)) fail(`the page does not show ${JSON.stringify(process.env.REPORT_SHOWS)} as text`);
    console.log("PASS: the hostile string shows as text, no script of it ran");
  }
  if (errors.length) fail("console errors: " + errors.join(" | "));
  if (requests.length) fail("the report made requests: " + requests.join(", "));
} finally {
  await browser.close();
}
