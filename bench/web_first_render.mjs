// First render of the agent's web page in Debian's chromium (headless,
// playwright-core): time from navigation start to the overview's 8 cards
// with their sparklines, and to the GPU page's layer and evidence charts,
// each over N fresh page loads; prints the median and the worst.
//   node web_first_render.mjs http://127.0.0.1:PORT [N]
import { chromium } from "playwright-core";

const base = process.argv[2];
const runs = Number(process.argv[3] || 5);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--no-sandbox"] });
const stats = (xs) => { const s = [...xs].sort((a, b) => a - b); return `median ${s[Math.floor(s.length / 2)].toFixed(0)} ms, worst ${s[s.length - 1].toFixed(0)} ms`; };
try {
  const overview = [], gpu = [];
  for (let i = 0; i < runs; i++) {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    await page.goto(base + "/", { waitUntil: "commit" });
    await page.waitForFunction(() => document.querySelectorAll("#gpus .card polyline").length >= 8, null, { timeout: 20000, polling: 10 });
    overview.push(await page.evaluate(() => performance.now()));
    await page.close();
    const p2 = await context.newPage();
    await p2.goto(base + "/#/gpu/5", { waitUntil: "commit" });
    await p2.waitForFunction(() => document.querySelectorAll("#layers .chart canvas").length >= 4 && document.querySelectorAll("#evidence .chart canvas").length >= 1, null, { timeout: 20000, polling: 10 });
    gpu.push(await p2.evaluate(() => performance.now()));
    await context.close();
  }
  console.log(`overview (8 cards, sparklines from 5 min of history): ${stats(overview)} over ${runs} loads`);
  console.log(`GPU page (4 layer charts + evidence over 30 min of 1 h): ${stats(gpu)} over ${runs} loads`);
} finally {
  await browser.close();
}
