// The viewer in a real browser (headless Chromium through playwright-core),
// on the page of tests/programs/golden_phases.c's trace: phase_one
// allocates 1024 x 1 KiB at about 0 ms, phase_two 384 x 2 KiB at about
// 200 ms (truth at the top of that file).  Run by
// tests/integration/test_view_browser.sh:
//   node view.cjs URL HTML_FILE TYPED_HTML_FILE OUT_DIR
// TYPED_HTML_FILE: the --html page of a trace with type tags: 2 Node of
// 48 B, 1 Buffer of 4096 B, 4 untagged blocks of 22 B, 12 of them from
// three sites too small to draw alone.
// STEPS_HTML_FILE (environment): the --html page of golden_phases recorded
// with --time-resolution=1s, its whole run inside one step.
// Exit status 1 on any failed check; screenshots go to OUT_DIR.
const { chromium } = require("playwright-core");

const [url, htmlFile, typedFile, out, gcFile] = process.argv.slice(2);
let failures = 0;
function check(cond, what, got) {
  if (cond) console.log("ok: " + what);
  else { console.log("FAIL: " + what + (got === undefined ? "" : ": got " + JSON.stringify(got))); failures++; }
}
const ready = (page) => page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
const tableRows = (page) => page.$$eval("#table tbody tr[data-function]",
  (trs) => trs.map((tr) => [tr.dataset.function, tr.querySelector(".calls").textContent, tr.querySelector(".bytes").textContent]));
const flameNodes = (page) => page.$$eval("#flame .node", (ds) => ds.map((d) => [d.dataset.function, +d.dataset.bytes]));

async function main() {
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1800 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });

  await page.goto(url);
  await ready(page);
  await page.screenshot({ path: out + "/view-initial.png", fullPage: true });
  check((await page.textContent("#title")).includes("golden_phases"), "the title names the program");
  check((await page.textContent('dd[data-key="allocations"]')) === "1 408", "info: 1 408 allocations");

  let rows = await tableRows(page);
  check(JSON.stringify(rows) === JSON.stringify([["phase_one", "1 024", "1 048 576"], ["phase_two", "384", "786 432"]]),
        "table: phase_one 1 048 576 bytes, phase_two 786 432", rows);
  let nodes = await flameNodes(page);
  check(nodes.some(([f, b]) => f === "phase_one" && b === 1048576), "flame graph: phase_one, 1048576 bytes", nodes);
  check(nodes.some(([f, b]) => f === "phase_two" && b === 786432), "flame graph: phase_two, 786432 bytes");
  check((await page.$$("#chart path")).length >= 1, "memory chart drawn");
  check(await page.$("#peak-mark") !== null, "the peak is marked");
  check((await page.$$("#lifetimes rect.cell")).length > 0, "lifetimes cells drawn");
  check(await page.isHidden("#types-section"), "no Types table for a trace without type tags");

  // Search marks both phases.
  await page.fill("#search", "phase");
  check((await page.textContent("#search-result")).startsWith("2 matching frames, 1.8 MiB"),
        "search 'phase': 2 frames, 1.8 MiB", await page.textContent("#search-result"));
  await page.fill("#search", "");

  // Zoom into phase_two, then reset.
  await page.click('#flame .node[data-function="phase_two"]');
  check((await page.textContent("#flame-path")).includes("phase_two"), "zoomed into phase_two");
  nodes = await flameNodes(page);
  check(nodes[0][0] === "phase_two" && !nodes.some(([f]) => f === "phase_one"), "zoomed: phase_two at the root", nodes);
  check(page.url().includes("zoom=phase_two"), "the zoom is in the address");
  await page.click("#reset");
  check((await flameNodes(page)).some(([f]) => f === "phase_one"), "reset zoom");

  // Direction: from main down.
  await page.click("#dir");
  await page.locator("#dir", { hasText: /^main/ }).waitFor(); // no waitForFunction: the page's CSP forbids eval
  nodes = await flameNodes(page);
  check(nodes.some(([f, b]) => f === "main" && b === 1835008), "top down: main holds 1835008 bytes", nodes);
  check(page.url().includes("dir=down"), "the direction is in the address");
  await page.click("#dir");
  await page.locator("#dir", { hasText: /^Allocation/ }).waitFor();

  // A table row's callers and callees.
  await page.click('#table tr[data-function="phase_two"] .toggle');
  await page.waitForSelector('#table tr.sub[data-kind="← called by"]');
  const sub = await page.$$eval("#table tr.sub", (trs) => trs.map((tr) => tr.textContent));
  check(sub.some((t) => t.includes("called by main") && t.includes("786 432")), "phase_two is called by main", sub);

  // Sort by calls, ascending after a second click.
  await page.click('#table th[data-sort="calls"]');
  await page.click('#table th[data-sort="calls"]');
  rows = await tableRows(page);
  check(rows[0][0] === "phase_two", "sorted by calls, fewest first", rows);

  // A size filter, typed in.
  await page.fill('input[name="size"]', "2K..2K");
  await page.click("#apply");
  await ready(page);
  rows = await tableRows(page);
  check(JSON.stringify(rows) === JSON.stringify([["phase_two", "384", "786 432"]]), "size 2K..2K: phase_two only", rows);
  check(page.url().includes("size=2K..2K"), "the filter is in the address");
  check(await page.$("#filtered-line") !== null, "the filtered series is drawn");
  await page.screenshot({ path: out + "/view-size-filter.png", fullPage: true });
  await page.click("#clear");
  await ready(page);

  // A time filter, dragged over the chart from 30% to 70% of the trace
  // (about 130 to 300 ms): allocated then, phase_two only.
  const box = await page.locator("#chart").boundingBox();
  const L = 60, span = box.width - L - 5;
  await page.mouse.move(box.x + L + span * 0.3, box.y + 50);
  await page.mouse.down();
  await page.mouse.move(box.x + L + span * 0.5, box.y + 60);
  await page.mouse.move(box.x + L + span * 0.7, box.y + 60);
  await page.mouse.up();
  await ready(page);
  rows = await tableRows(page);
  check(JSON.stringify(rows) === JSON.stringify([["phase_two", "384", "786 432"]]), "dragged 30% to 70%: phase_two only", rows);
  check(page.url().includes("allocated-between="), "the dragged time is in the address");

  // The address holds the view: loading it again shows the same.
  const again = await browser.newPage({ viewport: { width: 1280, height: 1800 } });
  await again.goto(page.url());
  await ready(again);
  check(JSON.stringify(await tableRows(again)) === JSON.stringify(rows), "the address reloads the same view");
  await again.close();
  check(errors.length === 0, "no errors in the page", errors);

  // The --html file, from disk, without a server.
  const file = await browser.newPage({ viewport: { width: 1280, height: 1800 } });
  await file.goto("file://" + htmlFile);
  await ready(file);
  await file.screenshot({ path: out + "/view-html-file.png", fullPage: true });
  rows = await tableRows(file);
  check(JSON.stringify(rows) === JSON.stringify([["phase_one", "1 024", "1 048 576"], ["phase_two", "384", "786 432"]]),
        "--html file: the same table", rows);
  check((await flameNodes(file)).some(([f, b]) => f === "phase_one" && b === 1048576), "--html file: the flame graph");
  check(await file.isVisible("#offline-note"), "--html file: says filters need the server");

  // Type tags: the Types table, and the count in the info panel.
  const typed = await browser.newPage({ viewport: { width: 1280, height: 1800 } });
  await typed.goto("file://" + typedFile);
  await ready(typed);
  await typed.screenshot({ path: out + "/view-types.png", fullPage: true });
  check(await typed.isVisible("#types-section"), "types: the table is shown");
  const types = await typed.$$eval("#types tbody tr", (trs) => trs.map((tr) =>
    [...tr.querySelectorAll("td")].slice(0, 3).map((td) => td.textContent)));
  check(JSON.stringify(types) === JSON.stringify([["Buffer", "1", "4 096"], ["Node", "2", "96"], ["(untagged)", "4", "22"]]),
        "types: Buffer 4 096, Node 96, untagged 22", types);
  const others = await typed.$$eval('#flame .node[data-merged]', (ds) => ds.map((d) => [d.dataset.function, +d.dataset.merged, +d.dataset.bytes]));
  check(JSON.stringify(others) === JSON.stringify([["(others)", 3, 12]]), "flame graph: the three tiny sites as one (others) node", others);
  check((await typed.textContent('dd[data-key="tagged allocations"]')) === "3", "info: 3 tagged allocations");

  // A Boehm GC program's heap (view --heap gc): the collector's heap size
  // over time, and the panel says which heap it is.
  if (gcFile) {
    const gc = await browser.newPage({ viewport: { width: 1280, height: 1800 } });
    await gc.goto("file://" + gcFile);
    await ready(gc);
    await gc.screenshot({ path: out + "/view-gc-heap.png", fullPage: true });
    check(await gc.isVisible("#gc-heap-line"), "gc: the collector's heap line is drawn");
    const heap = await gc.textContent('dd[data-key="heap"]');
    check(/^the garbage collector's \(\d+ collections\)$/.test(heap), "gc: the panel names the heap", heap);
    rows = await tableRows(gc);
    check(rows.length > 0 && rows[0][0] === "make_buffers" && rows[0][2] === "20 000",
          "gc: make_buffers first, 20 000 bytes", rows);
  }

  // A trace in steps of 1 s whose run fits in one: the info says the
  // step, the chart says why there is no curve.
  if (process.env.STEPS_HTML_FILE) {
    const st = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await st.goto("file://" + process.env.STEPS_HTML_FILE);
    await ready(st);
    await st.screenshot({ path: out + "/view-one-step.png" });
    const dur = await st.textContent('dd[data-key="duration"]');
    check(dur.includes("times in steps of 1.000 s"), "steps: the duration says the step", dur);
    const chart = await st.textContent("#chart");
    check(chart.includes("within one time step"), "steps: the chart says the run is in one step", chart);
  }
} finally {
  await browser.close();
}
return failures;
}

main().then((failed) => process.exit(failed ? 1 : 0),
            (e) => { console.log("FAIL: " + (e && e.stack || e)); process.exit(1); });
