// Opens an acprof HTML report in headless chromium (Debian's, driven by
// playwright-core, with every network request refused) and checks what a
// person would: the chart rendered, hovering shows the op and its bytes,
// dragging zooms, Reset restores the whole iteration.
//
//   node tests/browser/report_check.mjs REPORT.html [--screenshot OUT.png]
//
// Exits 0 when every check passes, 1 with one line per failure otherwise.
// checkReport() is also imported by real_reports_test.mjs.
import { chromium } from "playwright-core";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const CHROMIUM = process.env.ACPROF_CHROMIUM || "/usr/bin/chromium";

function parseArgs(argv) {
  const args = { report: null, screenshot: null };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--screenshot") args.screenshot = argv[++i];
    else args.report = argv[i];
  }
  if (!args.report) throw new Error("usage: report_check.mjs REPORT.html [--screenshot OUT.png]");
  return args;
}

// Independent of the page's own formatter: the profile format's formatBytes.
function formatBytes(bytes) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = Math.abs(bytes);
  let unit = 0;
  for (; value >= 1024 && unit < 4; unit++) value /= 1024;
  return (bytes < 0 ? "-" : "") + (unit === 0 ? `${Math.trunc(value)} B` : `${value.toFixed(2)} ${units[unit]}`);
}

// Returns the list of failed checks (empty: the report works).
export async function checkReport(reportPath, { screenshot = null } = {}) {
  const failures = [];
  function check(condition, message) {
    if (!condition) failures.push(`${path.basename(reportPath)}: ${message}`);
    return condition;
  }
  const args = { report: reportPath, screenshot };
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing; install it with apt-get install -y chromium`);
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), "acprof-chromium-"));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    deviceScaleFactor: 1,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
  });
  try {
    // The report must work offline: anything but the file itself is refused and counted.
    const reportUrl = pathToFileURL(path.resolve(args.report)).href;
    const foreignRequests = [];
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (url === reportUrl || url.startsWith("data:")) return route.continue();
      foreignRequests.push(url);
      return route.abort();
    });
    const page = context.pages()[0] || (await context.newPage());
    const pageErrors = [];
    page.on("pageerror", (error) => pageErrors.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error") pageErrors.push(message.text());
    });
    await page.goto(reportUrl, { waitUntil: "load" });
    await page.waitForSelector("body[data-rendered=true]", { timeout: 15000 });

    const data = await page.evaluate(() => JSON.parse(document.getElementById("acprof-data").textContent));
    const expectedCharts = data.kind === "comparison" ? 3 : 1;

    // 1. Rendered: canvases exist and hold a real drawing, not a blank plot.
    const drawing = await page.evaluate(() =>
      window.acprofCharts.map((u) => {
        const { width, height } = u.ctx.canvas;
        const pixels = u.ctx.getImageData(0, 0, width, height).data;
        let inked = 0;
        const colours = new Set();
        for (let i = 0; i < pixels.length; i += 4) {
          if (pixels[i + 3] > 0 && (pixels[i] < 240 || pixels[i + 1] < 240 || pixels[i + 2] < 240)) inked++;
          if (i % 64 === 0) colours.add((pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2]);
        }
        return { width, height, inkedFraction: inked / (width * height), colours: colours.size };
      })
    );
    check(drawing.length === expectedCharts, `expected ${expectedCharts} charts, found ${drawing.length}`);
    check((await page.locator(".uplot canvas").count()) >= expectedCharts, "no uPlot canvas on the page");
    drawing.forEach((d, i) => {
      check(d.width > 400 && d.height > 200, `chart ${i} canvas is ${d.width}x${d.height}`);
      check(d.inkedFraction > 0.05, `chart ${i} is nearly blank (${(d.inkedFraction * 100).toFixed(1)}% inked)`);
      check(d.colours > 4, `chart ${i} has only ${d.colours} colours`);
    });

    // 2. Hover over the peak of the first chart: the tooltip names the op and the bytes.
    const profile = data.profiles[0];
    const peak = profile.peak;
    const peakOp = profile.steps.op[peak.step];
    const target = await page.evaluate((p) => {
      const u = window.acprofCharts[0];
      const over = u.over.getBoundingClientRect();
      return { x: over.left + u.valToPos((p.x + p.x_end) / 2, "x"), y: over.top + over.height / 2 };
    }, peak);
    await page.mouse.move(target.x - 20, target.y);
    await page.mouse.move(target.x, target.y, { steps: 4 });
    const tooltip = page.locator(".acprof-tooltip");
    const tipShown = await tooltip.waitFor({ state: "visible", timeout: 5000 }).then(() => true, () => false);
    check(tipShown, "no tooltip appeared when hovering the peak");
    const tip = tipShown ? await tooltip.innerText() : "";
    check(tip.includes(peakOp), `tooltip at the peak does not name its op ${JSON.stringify(peakOp)}: ${JSON.stringify(tip)}`);
    check(tip.includes(formatBytes(peak.bytes)),
          `tooltip at the peak does not show the peak total ${formatBytes(peak.bytes)}: ${JSON.stringify(tip)}`);
    check(/\b(weight|activation|gradient)\b/.test(tip), `tooltip shows no category: ${JSON.stringify(tip)}`);

    // 3. Drag-select zooms every chart to the selected range; Reset restores it.
    const before = await page.evaluate(() => window.acprofCharts.map((u) => [u.scales.x.min, u.scales.x.max]));
    const over = await page.evaluate(() => {
      const r = window.acprofCharts[0].over.getBoundingClientRect();
      return { left: r.left, top: r.top, width: r.width, height: r.height };
    });
    const y = over.top + over.height / 2;
    await page.mouse.move(over.left + over.width * 0.3, y);
    await page.mouse.down();
    await page.mouse.move(over.left + over.width * 0.5, y, { steps: 5 });
    await page.mouse.move(over.left + over.width * 0.6, y, { steps: 5 });
    await page.mouse.up();
    const zoomed = await page.evaluate(() => window.acprofCharts.map((u) => [u.scales.x.min, u.scales.x.max]));
    const [fullMin, fullMax] = before[0];
    const span = fullMax - fullMin;
    const [zMin, zMax] = zoomed[0];
    check(Math.abs(zMin - (fullMin + 0.3 * span)) < 0.02 * span && Math.abs(zMax - (fullMin + 0.6 * span)) < 0.02 * span,
          `drag from 30% to 60% zoomed to [${zMin}, ${zMax}] of [${fullMin}, ${fullMax}]`);
    zoomed.forEach((range, i) =>
      check(range[0] === zMin && range[1] === zMax, `chart ${i} did not follow the zoom: [${range}] vs [${zMin}, ${zMax}]`));
    await page.getByRole("button", { name: "Reset zoom" }).click();
    const reset = await page.evaluate(() => window.acprofCharts.map((u) => [u.scales.x.min, u.scales.x.max]));
    check(reset[0][0] === fullMin && reset[0][1] === fullMax, `Reset zoom gave [${reset[0]}], not [${before[0]}]`);

    check(foreignRequests.length === 0, `the report requested ${foreignRequests.join(", ")}`);
    check(pageErrors.length === 0, `the page reported errors: ${pageErrors.join(" | ")}`);

    if (args.screenshot) {
      // The header and every chart, with the tooltip at the peak; the tables
      // stay out. The viewport grows first: a resize redraws the charts and
      // would drop the cursor.
      const bottom = await page.evaluate(() => document.querySelector(".charts").getBoundingClientRect().bottom + 8);
      await page.setViewportSize({ width: 1280, height: Math.ceil(bottom) });
      await page.waitForTimeout(200);
      const peakAt = await page.evaluate((p) => {
        const u = window.acprofCharts[0];
        const r = u.over.getBoundingClientRect();
        return { x: r.left + u.valToPos((p.x + p.x_end) / 2, "x"), y: r.top + r.height / 2 };
      }, peak);
      await page.mouse.move(peakAt.x - 20, peakAt.y);
      await page.mouse.move(peakAt.x, peakAt.y, { steps: 4 });
      await page.screenshot({ path: args.screenshot });
    }
  } finally {
    await context.close();
    fs.rmSync(profileDir, { recursive: true, force: true });
  }
  return failures;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const failures = await checkReport(args.report, { screenshot: args.screenshot });
  for (const failure of failures) console.error(`report_check: ${failure}`);
  if (failures.length) process.exit(1);
  console.log(`report_check: ${args.report}: rendered, tooltip, zoom and reset all work`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    console.error(`report_check: ${error.message.split("\n")[0]}`);
    process.exit(1);
  });
}
