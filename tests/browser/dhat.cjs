// What `memtally export --format dhat` writes, opened in valgrind's own
// dh_view.html in headless Chromium (through playwright-core), on the
// trace of tests/programs/golden_funcs.c (truth at the top of that file):
// 6 708 bytes in 43 blocks, 6 020 bytes in 31 blocks at the peak, 1 300
// bytes in 3 blocks at the end; make_buffer (3 000 bytes, 3 blocks, all
// live at the peak, 1 000 at the end) the top allocation point by bytes,
// alpha (10 blocks) by blocks.  Run by tests/integration/test_export_dhat.sh:
//   node dhat.cjs DH_VIEW_HTML DHAT_JSON SCREENSHOT
// Exit status 1 on any failed check.
const { chromium } = require("playwright-core");

const [viewer, file, shot] = process.argv.slice(2);
let failures = 0;
function check(cond, what, got) {
  if (cond) console.log("ok: " + what);
  else { console.log("FAIL: " + what + (got === undefined ? "" : ": got " + JSON.stringify(got))); failures++; }
}
async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu"],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto("file://" + viewer);
    await page.setInputFiles('input[type="file"]', file);
    await page.waitForFunction(() => document.body.innerText.includes("PP 1/1"), null, { timeout: 20000 });
    let body = await page.innerText("body");
    check(!/error/i.test(body.split("Legend")[0]) && errors.length === 0, "dh_view loads the file without an error",
          errors.concat(body.match(/.*error.*/i) || []));
    check(body.includes("Total:     6,708 bytes (100%") && body.includes("in 43 blocks (100%"),
          "the root: 6,708 bytes in 43 blocks", body.slice(0, 600));
    check(body.includes("At t-gmax: 6,020 bytes (100%) in 31 blocks"), "the root at t-gmax: 6,020 bytes in 31 blocks");
    check(body.includes("At t-end:  1,300 bytes (100%) in 3 blocks"), "the root at t-end: 1,300 bytes in 3 blocks");

    // Sorted by bytes, the top allocation point is make_buffer's.
    await page.selectOption("select", { label: "Total (bytes)" });
    await page.waitForTimeout(300);
    body = await page.innerText("body");
    const first = body.indexOf("PP 1.1/");
    const top = first < 0 ? "" : body.slice(first, body.indexOf("}", body.indexOf("Allocated at", first)));
    check(top.includes("Total:     3,000 bytes (44.72%") && top.includes("in 3 blocks"),
          "by bytes, the top point: 3,000 bytes in 3 blocks", top);
    check(/#1: 0x[0-9A-F]+: make_buffer \(.*golden_funcs\.c:\d+\)/.test(top), "its frame: make_buffer, file and line", top);
    check(top.includes("Max:       3,000 bytes in 3 blocks"), "its highest: 3,000 bytes in 3 blocks", top);
    check(top.includes("At t-end:  1,000 bytes (76.92%) in 1 blocks"), "at t-end: 1,000 bytes in 1 block", top);
    await page.screenshot({ path: shot, fullPage: true });
  } finally {
    await browser.close();
  }
  process.exit(failures ? 1 : 0);
}
main().catch((e) => { console.log("FAIL: " + e); process.exit(1); });
