// The browser test CTest runs: a real profile of a test model, a plan, the
// rewrite's before/after report and 'acprof view' with the plan, each page
// opened in headless chromium by checkReport.
//
//   node tests/browser/real_reports_test.mjs --acprof BIN --model MODEL.pt --workdir DIR
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { checkReport } from "./report_check.mjs";

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i += 2) args[argv[i].replace(/^--/, "")] = argv[i + 1];
  for (const required of ["acprof", "model", "workdir"])
    if (!args[required]) throw new Error(`--${required} is required`);
  return args;
}

function acprof(binary, workdir, args) {
  try {
    return execFileSync(binary, args, { cwd: workdir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    throw new Error(`acprof ${args.join(" ")} failed: ${(error.stderr || error.message).trim()}`);
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const workdir = path.resolve(args.workdir);
  fs.rmSync(workdir, { recursive: true, force: true });
  fs.mkdirSync(workdir, { recursive: true });
  // An input large enough that activations, not weights, dominate the peak,
  // so the plan has something to recompute.
  acprof(args.acprof, workdir, ["profile", args.model, "--input", "float32[8,3,128,128]", "--target",
                                "int64[8]:0..10", "--loss", "cross_entropy", "-o", "profile.json"]);
  acprof(args.acprof, workdir, ["plan", "profile.json", "--budget", "95%", "-o", "plan.json"]);
  acprof(args.acprof, workdir, ["rewrite", args.model, "plan.json", "-o", path.join(workdir, "model.ckpt.pt"),
                                "--report-dir", workdir]);
  acprof(args.acprof, workdir, ["view", "profile.json", "--plan", "plan.json", "-o", "timeline.html", "--svg",
                                "timeline.svg", "--trace", "trace.json"]);
  JSON.parse(fs.readFileSync(path.join(workdir, "trace.json"), "utf8"));

  const failures = [];
  for (const report of ["timeline.html", "report.html"]) failures.push(...(await checkReport(path.join(workdir, report))));
  for (const failure of failures) console.error(`real_reports_test: ${failure}`);
  if (failures.length) process.exit(1);
  console.log("real_reports_test: timeline.html and report.html render, hover, zoom and reset in chromium");
}

main().catch((error) => {
  console.error(`real_reports_test: ${error.message.split("\n")[0]}`);
  process.exit(1);
});
