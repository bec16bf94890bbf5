// A capture attached to a finding (diagnose.profile_on), as Debian's chromium
// (playwright-core, locked) draws it:
//   node profile_test.mjs page URL GPU CAUSE TEXT     the agent's web page: the finding on that GPU's card
//   node profile_test.mjs report FILE.html GPU CAUSE TEXT   the HTML report of `diagnose --agent`
// The finding shows its profile, done, with TEXT (a frame or op name) in
// its table of top items and a share beside it. No console error. Exits 1
// with the reason on the first failed check.
import { chromium } from "playwright-core";
import { pathToFileURL } from "node:url";

const [kind, where, gpu, cause, text] = process.argv.slice(2);
const fail = (msg) => { console.error("FAIL: " + msg); process.exit(1); };
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--no-sandbox"] });
try {
  const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  let sel;
  if (kind === "page") {
    await page.goto(where + "/", { waitUntil: "load" });
    await page.waitForSelector("#gpus .card", { timeout: 10000 });
    sel = `#gpus .card[data-gpu="${gpu}"] .finding[data-cause="${cause}"] .profile`;
  } else {
    await page.goto(pathToFileURL(where).href, { waitUntil: "load" });
    await page.waitForSelector('body[data-rendered="diagnose"]', { timeout: 10000 });
    sel = `.gpu[data-gpu="${gpu}"] .finding[data-cause="${cause}"] .profile`;
  }
  const found = await page.$$eval(sel, (els) => els.map((e) => ({
    state: e.dataset.state,
    rows: [...e.querySelectorAll("table.profile-top tr")].map((r) => [...r.cells].map((c) => c.textContent)),
  })));
  if (found.length !== 1) fail(`${found.length} profiles at ${sel}`);
  const p = found[0];
  if (p.state !== "done") fail(`the profile is ${p.state}`);
  const row = p.rows.find((r) => r[0].includes(text));
  if (!row) fail(`no row naming ${text}: ${JSON.stringify(p.rows)}`);
  if (!/^\d+\.\d %$/.test(row[1])) fail(`its share reads ${row[1]}`);
  if (errors.length) fail("console errors: " + errors.join(" | "));
  console.log(`PASS: ${kind}: ${cause} on GPU ${gpu} shows its capture, ${row[0]} at ${row[1]}`);
} finally {
  await browser.close();
}
