// End-to-end test of the real built console (frontend embedded) under Xvfb,
// driven through tauri-driver + WebKitWebDriver with plain W3C WebDriver
// calls (Node's fetch; no client library). Run by scripts/test.sh, which
// starts Xvfb and tauri-driver and sets:
//   JCP_E2E_APP        absolute path of the built jcp-console binary
//   JCP_E2E_SHOTS      folder for screenshots (target/screenshots)
//   JCP_E2E_WORKSPACE  a fresh workspace folder
//   JCP_E2E_GOOD / JCP_E2E_GOOD_JSON, JCP_E2E_BAD / JCP_E2E_BAD_JSON
//                      streams written by the `jcp` CLI and `jcp audit --json` of each
//                      (only when the audit crate is in the build)
//   JCP_E2E_JCP        the `jcp` CLI, to compare the run and blueprint views with
//                      `jcp run verify --json` and `jcp blueprint reconcile --json`
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import { spawnSync } from "node:child_process";
import { webdriver } from "./webdriver.mjs";

const DRIVER = process.env.JCP_E2E_DRIVER ?? "http://127.0.0.1:4444";
const APP = process.env.JCP_E2E_APP;
const SHOTS = process.env.JCP_E2E_SHOTS ?? "target/screenshots";
const WS = process.env.JCP_E2E_WORKSPACE;

const wd = webdriver(DRIVER);

/** Chooses `file` in the console's native file dialog (GTK, opened from Rust) as a person would:
 *  the dialog titled `title` is found on the display, its location typed and Return pressed.
 *  Issue 34: the window names files only by the handles Rust gives for what was chosen here,
 *  so the test goes through the real dialog (xdotool, installed by scripts/setup.sh). */
async function chooseInDialog(title, file) {
  // A folder is typed with its final "/": the dialog (opened in the workspace) takes it on Return.
  const xdo = (...args) => spawnSync("xdotool", args, { encoding: "utf8" });
  const deadline = Date.now() + 20000;
  let win = "";
  while (!win && Date.now() < deadline) {
    win = (xdo("search", "--onlyvisible", "--name", title).stdout ?? "").trim().split("\n")[0] ?? "";
    if (!win) await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(win, `the native dialog "${title}" opened`);
  xdo("windowfocus", "--sync", win);
  await new Promise((r) => setTimeout(r, 300));
  xdo("key", "--clearmodifiers", "ctrl+l");
  await new Promise((r) => setTimeout(r, 200));
  xdo("type", "--clearmodifiers", "--delay", "2", file);
  await new Promise((r) => setTimeout(r, 400));
  // What the location bar completes on its own is selected: deleted, so Return takes what was typed.
  xdo("key", "--clearmodifiers", "Delete");
  await new Promise((r) => setTimeout(r, 200));
  xdo("key", "--clearmodifiers", "Return");
}

const timings = [];

class Session {
  static async start(args = []) {
    assert.ok(APP, "JCP_E2E_APP must name the built app");
    const t0 = Date.now();
    const v = await wd("POST", "/session", {
      capabilities: { alwaysMatch: { "tauri:options": { application: APP, args } } },
    });
    const s = new Session(v.sessionId);
    await s.waitFor(async () => (await s.exec("return document.querySelector('nav') !== null")) === true, 20000, "the console's first paint");
    // Cold start to first paint as the page itself saw it (navigation start to first contentful paint).
    s.firstPaintMs = await s.exec(
      "const p = performance.getEntriesByType('paint').find(e => e.name === 'first-contentful-paint'); return p ? p.startTime : null",
    );
    s.sessionMs = Date.now() - t0;
    timings.push({ args, first_contentful_paint_ms: s.firstPaintMs, session_to_ui_ms: s.sessionMs });
    fs.mkdirSync(SHOTS, { recursive: true });
    fs.writeFileSync(path.join(SHOTS, "timings.json"), JSON.stringify(timings, null, 2));
    return s;
  }
  constructor(id) {
    this.id = id;
  }
  u(p) {
    return `/session/${this.id}${p}`;
  }
  exec(script, args = []) {
    return wd("POST", this.u("/execute/sync"), { script, args });
  }
  async find(css) {
    const v = await wd("POST", this.u("/element"), { using: "css selector", value: css });
    return Object.values(v)[0];
  }
  async text(css) {
    return wd("GET", this.u(`/element/${await this.find(css)}/text`));
  }
  async click(css) {
    await wd("POST", this.u(`/element/${await this.find(css)}/click`), {});
  }
  async type(css, text) {
    const id = await this.find(css);
    await wd("POST", this.u(`/element/${id}/clear`), {});
    await wd("POST", this.u(`/element/${id}/value`), { text });
  }
  /** Text read in the page in one step (no element reference to go stale under a poll's re-render). */
  textOf(css) {
    return this.exec(`const e = document.querySelector(${JSON.stringify(css)}); return e ? e.textContent : null`);
  }
  visible(css) {
    return this.exec(`const e = document.querySelector(${JSON.stringify(css)}); return !!e && !e.hidden && e.offsetParent !== null`);
  }
  async shot(name) {
    fs.mkdirSync(SHOTS, { recursive: true });
    const file = path.join(SHOTS, `${name}.png`);
    try {
      // WebKitWebDriver sometimes never answers a screenshot of an idle page
      // (seen on a view shorter than the window); do not wait 5 minutes for it.
      const res = await fetch(DRIVER + this.u("/screenshot"), { signal: AbortSignal.timeout(15000) });
      const json = await res.json();
      if (!res.ok) throw new Error(JSON.stringify(json.value ?? json));
      fs.writeFileSync(file, Buffer.from(json.value, "base64"));
    } catch (e) {
      // Fall back to the X display the app runs on (ImageMagick, as in scripts/setup.sh).
      const r = spawnSync("import", ["-window", "root", file], { encoding: "utf8" });
      assert.equal(r.status, 0, `screenshot ${name}: WebDriver failed (${e.message}) and import failed: ${r.stderr}`);
      console.log(`# screenshot ${name}: taken from the X display (WebDriver: ${e.message})`);
    }
  }
  async waitFor(pred, ms, what) {
    const t0 = Date.now();
    let last;
    while (Date.now() - t0 < ms) {
      try {
        if (await pred()) return;
      } catch (e) {
        last = e;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${last.message}` : ""}`);
  }
  end() {
    return wd("DELETE", this.u(""));
  }
}

const appInfo = (s) =>
  s.exec("return document.querySelector('footer') && document.querySelector('footer').textContent");

test("energy view: windows with provenance labels and the ladder panel", async () => {
  const s = await Session.start();
  try {
    await s.click("#tab-energy");
    // The estimate rung always exists on Linux, so readings come once the probe ends.
    await s.waitFor(async () => /^(Measured|Modelled|Estimated|Mixed):/.test(await s.text("#energy-headline")), 20000, "a headline saying what the figures are");
    await s.waitFor(
      async () => (await s.exec("return document.querySelectorAll('.windows-table tbody tr.window').length")) >= 3,
      20000,
      "three energy windows",
    );
    const grades = await s.exec(
      "return [...document.querySelectorAll('.windows-table tbody tr.window')].map(r => r.querySelector('.provenance').textContent)",
    );
    for (const g of grades) assert.match(g, /^(HwShunt|ModelBased|Estimator)$/, "every reading window carries its provenance label");
    // Issue 39: the headline says what the figures are; estimates never read as metering live.
    const headline = await s.text("#energy-headline");
    if (grades.every((g) => g === "Estimator")) {
      assert.match(headline, /^Estimated: /, headline);
      assert.ok(!/live/i.test(headline.split("(")[0]), `an estimate is not headlined as live metering: ${headline}`);
    }
    assert.match(await s.text("#energy-total"), /s windows\. Shown: (at least )?[\d.]+ (µJ|mJ|J|kJ|MJ)/, "the shown windows' energy, summed");
    const powers = await s.exec("return [...document.querySelectorAll('.windows-table tbody tr.window .power')].map(c => c.textContent)");
    for (const p of powers) assert.match(p, /^[\d.]+ (mW|W|kW)$/, "each window's power in watts");
    // A rung that does not meter shows the grade it would give, not a chip as if earned.
    const unearned = await s.exec(
      "return [...document.querySelectorAll('.ladder-table tbody tr.rung:not(.chosen)')].filter(r => r.querySelector('.grade')).length",
    );
    assert.equal(unearned, 0, "no grade chip on a rung that was not chosen");
    const gaps = await s.exec("return [...document.querySelectorAll('.windows-table tbody tr.gap')].map(r => r.querySelector('.energy').textContent)");
    for (const g of gaps) assert.equal(g, "no reading", "a gap is never shown as zero");
    const rungs = await s.exec(
      "return [...document.querySelectorAll('.ladder-table tbody tr.rung')].map(r => [r.querySelector('.name').textContent, r.querySelector('.rstatus').textContent, r.querySelector('.why').textContent])",
    );
    assert.ok(rungs.length >= 4, `the ladder lists every rung: ${JSON.stringify(rungs)}`);
    assert.equal(rungs.filter((r) => r[1] === "chosen").length, 1, `exactly one chosen rung: ${JSON.stringify(rungs)}`);
    for (const r of rungs) assert.ok(r[2].length > 0, `rung ${r[0]} says why`);
    assert.ok(await s.exec("return document.querySelector('#energy-chart svg') !== null"), "the plotters chart is shown");
    const legend = await s.exec("return document.querySelector('#energy-chart svg').textContent");
    for (const word of ["HwShunt", "ModelBased", "Estimator", "Partial", "gap"]) assert.ok(legend.includes(word), `legend explains ${word}`);
    await s.shot("energy");
    assert.ok((await appInfo(s)).includes("workspace"), "footer names the workspace");
  } finally {
    await s.end();
  }
});

const good = process.env.JCP_E2E_GOOD;
const bad = process.env.JCP_E2E_BAD;

function expectShown(shown, expected) {
  assert.equal(shown.verdict, expected.clean ? "clean" : "findings", "verdict as `jcp audit --json` (clean = exit 0)");
  // Every number in the CLI's report is in the rendered report, under its heading.
  // A number directly under a key is that key's cell; numbers inside a list
  // (offsets, (stream, offset) pairs) appear within that key's cell.
  const flat = [];
  const walk = (v, key, inList) => {
    const ratio = v && typeof v === "object" && Object.keys(v).length === 2 && typeof v.num === "number" && typeof v.den === "number";
    if (typeof v === "number") flat.push([key, v, inList]);
    // An exact ratio ({num, den}, a §5.5 floor) is one cell, `num/den`, as the report renders it.
    else if (ratio) flat.push([key, `${v.num}/${v.den}`, inList]);
    else if (Array.isArray(v)) v.forEach((x) => walk(x, key, inList || !(x && typeof x === "object" && !Array.isArray(x))));
    else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) walk(x, k, false);
  };
  walk(expected, "", false);
  assert.ok(flat.length > 0, "the CLI report has numbers");
  for (const [key, n, inList] of flat) {
    // An energy's heading drops its unit (`budget_uj` → `budget`): its cell says it, exact in data-exact.
    const heading = key.replace(/_uj$/, "").replaceAll("_", " ");
    assert.ok(
      shown.cells.some(([h, c]) => h === heading && (inList ? c.includes(String(n)) : c === String(n))),
      `shown report has ${heading} = ${n}`,
    );
  }
  return flat.length;
}

const readShown = (s) =>
  s.exec(`
    const cells = [];
    for (const tr of document.querySelectorAll('.report table.kv > tbody > tr')) {
      const th = tr.querySelector(':scope > th'), td = tr.querySelector(':scope > td');
      // An energy cell shows words; its exact µJ is in data-exact (and on hover).
      if (th && td) cells.push([th.textContent, td.dataset.exact ?? td.textContent]);
    }
    for (const t of document.querySelectorAll('.report table.rows')) {
      const heads = [...t.querySelectorAll(':scope > thead th')].map(h => h.textContent);
      for (const tr of t.querySelectorAll(':scope > tbody > tr'))
        [...tr.children].forEach((td, i) => cells.push([heads[i], td.dataset.exact ?? td.textContent]));
    }
    return { verdict: document.querySelector('#audit-verdict .value').textContent, cells };`);

test("auditor: a CLI-written stream shows the same verdict and counts as `jcp audit --json`", { skip: !good && "the audit crate is not in this build" }, async () => {
  const expected = JSON.parse(fs.readFileSync(process.env.JCP_E2E_GOOD_JSON, "utf8"));
  const s = await Session.start([good]);
  try {
    // Opened with a stream, the console lands on the Auditor (no click).
    await s.waitFor(async () => (await s.exec("return document.querySelector('#tab-auditor.active') !== null")) === true, 30000, "the Auditor tab, active at start");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#audit-verdict') !== null")) === true, 60000, "the verdict");
    expectShown(await readShown(s), expected);
    await s.shot("auditor-clean");
  } finally {
    await s.end();
  }
});

test("auditor: a tampered stream shows its finding", { skip: !bad && "the audit crate is not in this build" }, async () => {
  const expected = JSON.parse(fs.readFileSync(process.env.JCP_E2E_BAD_JSON, "utf8"));
  const s = await Session.start([bad]);
  try {
    await s.click("#tab-auditor");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#audit-verdict') !== null")) === true, 60000, "the verdict");
    const shown = await readShown(s);
    assert.notEqual(shown.verdict, "clean", "a tampered stream is not clean");
    // The answer first (issue 39): every finding counted, the first one's place said.
    const count = Object.values(expected.findings_by_code).reduce((a, b) => a + b, 0);
    const answer = await s.text("#audit-answer");
    assert.ok(answer.startsWith(`${count} finding`), `${answer} counts ${count}`);
    assert.ok(answer.replace(/\u202f/g, "").includes(`at byte ${expected.findings[0].offset} of stream`), answer);
    // Ids are short, the whole on hover, copied by a click (issue 39).
    const ids = await s.exec("return [...document.querySelectorAll('.report code.id')].map(c => [c.textContent, c.title, c.getAttribute('role')])");
    assert.ok(ids.length > 0, "the report shortens its ids");
    for (const [shown, whole, role] of ids) assert.ok(shown.endsWith("…") && whole.startsWith(shown.slice(0, -1)) && role === "button", `${shown} ${whole} ${role}`);
    expectShown(shown, expected);
    // Each finding the CLI names (code at a byte offset) is a row of the shown findings table.
    assert.ok(expected.findings.some((f) => f.code === "bad-signature"), "the CLI finds the tampering");
    for (const f of expected.findings) {
      assert.ok(
        shown.cells.some(([h, c]) => h === "code" && c === f.code) && shown.cells.some(([h, c]) => h === "offset" && c === String(f.offset)),
        `finding ${f.code} at ${f.offset} is shown`,
      );
    }
    await s.shot("auditor-tampered");
    // Each finding links the record it names (issue 39): the first bad
    // signature's offset opens its record, as `jcp stream show` shows it.
    const f0 = expected.findings.find((f) => f.code === "bad-signature");
    const cli = spawnSync(process.env.JCP_E2E_JCP, ["stream", "show", bad, "--at", String(f0.offset), "--json"], { encoding: "utf8" });
    assert.equal(cli.status, 1, `jcp stream show refuses the tampered record: ${cli.stderr}`);
    const rec = JSON.parse(cli.stdout);
    await s.exec(`document.querySelector('.report a.record-link[data-at="${f0.offset}"]').click(); return true`);
    await s.waitFor(async () => (await s.exec(`return document.querySelector('#audit-record')?.dataset.offset ?? null`)) === String(f0.offset), 10000, "the record panel");
    const panel = await s.exec("const b = document.querySelector('#audit-record'); return [b.hidden, b.querySelector('h3').textContent, b.querySelector('.record-check').className, b.querySelector('.record-check').textContent, b.querySelector('.record-facts').textContent]");
    assert.equal(panel[0], false);
    assert.equal(panel[1].replace(/\u202f/g, ""), `Receipt #${rec.number} at byte ${rec.offset}`);
    assert.ok(panel[2].includes(rec.check.state) && panel[3].includes(rec.check.code) && panel[3].includes(rec.check.message), `${panel[3]} as the CLI's ${JSON.stringify(rec.check)}`);
    assert.ok(panel[4].includes(rec.id.slice(0, 16)), "its id");
    await s.shot("auditor-record");
    // Walk on to the next record, and back.
    await s.exec("document.querySelector('#audit-record .record-next').click(); return true");
    await s.waitFor(async () => (await s.exec(`return document.querySelector('#audit-record').dataset.offset`)) === String(rec.next), 10000, "the next record");
    await s.exec("document.querySelector('#audit-record .record-prev').click(); return true");
    await s.waitFor(async () => (await s.exec(`return document.querySelector('#audit-record').dataset.offset`)) === String(rec.offset), 10000, "back to the record");
  } finally {
    await s.end();
  }
});

test("auditor: the demo workspace's streams are listed and auditable with a click", async () => {
  const s = await Session.start();
  try {
    await s.click("#tab-auditor");
    await s.waitFor(async () => (await s.exec("return !document.querySelector('#view-auditor').hidden")) === true, 5000, "the auditor view");
    assert.equal(await s.exec("return document.querySelector('.open-streams').disabled"), false, "the audit engine is in the build");
    await s.waitFor(
      async () => (await s.exec("return [...document.querySelectorAll('.recent-streams td.path')].some(td => td.textContent.endsWith('demo-tampered.jcps'))")) === true,
      60000,
      "the demo streams in the workspace list",
    );
    await s.exec(
      "const row = [...document.querySelectorAll('.recent-streams tbody tr')].find(r => r.querySelector('td.path').textContent.endsWith('demo-tampered.jcps')); row.querySelector('button.audit-again').click(); return true",
    );
    await s.waitFor(async () => (await s.exec("return document.querySelector('#audit-verdict') !== null")) === true, 60000, "the demo verdict");
    assert.equal(await s.text("#audit-verdict .value"), "findings", "the tampered demo stream has findings");
    await s.shot("auditor");
  } finally {
    await s.end();
  }
  assert.ok(WS === undefined || fs.existsSync(path.join(WS, "workspace.sqlite")), "the workspace store was created");
});

// Issue 21: record the machine's windows as a session, declare a baseline from it, read a second
// session against it (the five looks apart) and reconcile a demo grant's spend against it — the
// same figures `jcp energy dynamism` and `jcp energy reconcile` give for the same files.
test("energy view: a recorded session against a declared baseline and a grant's spend, as `jcp energy` says", async () => {
  const s = await Session.start();
  try {
    await s.click("#tab-energy");
    await s.waitFor(async () => /^(Measured|Modelled|Estimated|Mixed):/.test(await s.text("#energy-headline")), 20000, "the meter reading");
    const record = async (windows) => {
      await s.exec("const i = document.querySelector('#session-occupancy'); i.value = 'idle'; document.querySelector('#session-record').click(); return true");
      await s.waitFor(async () => (await s.exec("return document.querySelector('.rec-state').textContent")).includes(`${windows} window`), 30000, `${windows} recorded windows`);
      const before = await s.exec("return document.querySelector('#session-path').value");
      await s.exec("document.querySelector('#session-record').click(); return true");
      await s.waitFor(async () => {
        const v = await s.exec("return document.querySelector('#session-path').value");
        return v.endsWith(".json") && v !== before;
      }, 10000, "the saved session");
      return s.exec("return document.querySelector('#session-path').value");
    };
    // Issue 34: the file fields show what the console chose or wrote; they cannot be typed in.
    assert.equal(await s.exec("return ['#session-path', '#session-baseline', '#session-streams'].every(q => document.querySelector(q).readOnly)"), true);
    await record(3);
    // The baseline is declared from the session just recorded (the panel holds its handle).
    await s.exec("document.querySelector('#session-declare').click(); return true");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#session-baseline').value")).includes("baseline-"), 10000, "the declared baseline");
    const baseline = await s.exec("return document.querySelector('#session-baseline').value");
    const second = await record(3);
    // A demo grant with spend, from the demo stream's audit; the stream picked from the workspace's list.
    const stream = path.join(WS ?? "", "demo", "demo.jcps");
    const [, audit] = jcp(["audit", stream]);
    const grant = audit.grants.find((g) => g.spent_uj > 0).grant_id;
    await s.waitFor(async () => (await s.exec(`return [...document.querySelectorAll('#session-workspace-streams option')].some(o => o.title === ${JSON.stringify(stream)})`)) === true, 10000, "the workspace's streams to pick from");
    await s.exec(`const sel = document.querySelector('#session-workspace-streams');
      sel.value = [...sel.options].find(o => o.title === ${JSON.stringify(stream)}).value; sel.dispatchEvent(new Event('change'));
      document.querySelector('#session-grant').value = ${JSON.stringify(grant)};
      document.querySelector('#session-analyze').click(); return true`);
    assert.equal(await s.exec("return document.querySelector('#session-streams').value"), stream);
    await s.waitFor(async () => (await s.exec("return document.querySelector('#session-conservation') !== null")) === true, 30000, "the analysis");
    const [, dyn] = jcp(["energy", "dynamism", "--windows", second, "--baseline", baseline]);
    const looks = await s.exec("return [...document.querySelectorAll('.looks .look .n')].map(n => Number(n.textContent))");
    assert.deepEqual(looks, [dyn.within_band, dyn.explained, dyn.unexplained, dyn.inapplicable, dyn.unresolvable], "the five looks as the CLI counts them");
    assert.equal(looks.reduce((a, b) => a + b, 0), dyn.windows.length);
    const [, rec] = jcp(["energy", "reconcile", "--grant", grant, "--windows", second, stream]);
    const shown = await s.exec("return { balanced: document.querySelector('#session-conservation .balanced td').textContent, statement: document.querySelector('#session-conservation .statement').textContent }");
    assert.equal(shown.balanced, rec.balanced ? "yes" : "no");
    assert.equal(shown.statement, rec.statement);
    await s.exec("document.querySelector('#energy-sessions').scrollIntoView(); return true");
    await s.shot("energy-sessions");
  } finally {
    await s.end();
  }
});

// ---- the demo workspace: overview, run view, blueprint view ----

/** `jcp ARGS --json` → [exit code, parsed JSON]. */
function jcp(args) {
  const JCP = process.env.JCP_E2E_JCP;
  assert.ok(JCP, "JCP_E2E_JCP must name the jcp CLI");
  const r = spawnSync(JCP, [...args, "--json"], { encoding: "utf8" });
  assert.ok(r.status === 0 || r.status === 1, `jcp ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return [r.status, JSON.parse(r.stdout)];
}

const overview = (s) =>
  s.exec(
    "return [...document.querySelectorAll('#view-workspace .items-table tbody tr.item')].map(r => [r.classList[1], r.querySelector('.path').textContent, r.querySelector('.outcome').textContent])",
  );

test("workspace: the demo's streams, run and blueprint are listed on first start", async () => {
  const s = await Session.start();
  try {
    assert.equal(await s.exec("return document.querySelector('#view-workspace').hidden"), false, "the overview is the first view");
    await s.waitFor(async () => {
      const kinds = (await overview(s)).map((r) => r[0]);
      return kinds.includes("stream") && kinds.includes("run") && kinds.includes("blueprint");
    }, 60000, "the demo workspace in the overview");
    const rows = await overview(s);
    // The demo's two streams (earlier tests in this workspace opened others too).
    const inDemo = (p) => !WS || p.startsWith(path.join(WS, "demo") + path.sep);
    assert.equal(rows.filter((r) => r[0] === "stream" && inDemo(r[1])).length, 2, JSON.stringify(rows));
    // The demo long run and the three authority runs (rotated steward, threshold board, standing grant).
    assert.equal(rows.filter((r) => r[0] === "run").length, 4, JSON.stringify(rows));
    assert.equal(rows.filter((r) => r[0] === "blueprint").length, 2, JSON.stringify(rows));
    for (const [, p] of rows) assert.ok(!WS || fs.existsSync(p), `${p} exists`);
    await s.shot("workspace");
    // The first-run guide (issue 39): which view is whose; dismissed, it stays hidden.
    if (await s.exec("return !document.querySelector('#first-run-guide').hidden")) {
      const people = await s.exec("return [...document.querySelectorAll('#first-run-guide .guide-go')].map(b => b.textContent)");
      assert.deepEqual(people, ["A steward", "An auditor", "A developer", "Everyone"]);
      await s.click("#first-run-guide .guide-dismiss");
      assert.equal(await s.exec("return document.querySelector('#first-run-guide').hidden"), true, "dismissed");
    }
    // A stream an earlier test opened is removed from the list; its file stays.
    const other = rows.find((r) => r[0] === "stream" && !inDemo(r[1]));
    if (other) {
      const clicked = await s.exec(
        `const r = [...document.querySelectorAll('#view-workspace tr.item.stream')].find(r => r.querySelector('.path').textContent === arguments[0]);
         if (!r) return false; r.querySelector('button.forget-item').click(); return true`,
        [other[1]],
      );
      assert.ok(clicked, `${other[1]} has a Remove button`);
      await s.waitFor(async () => !(await overview(s)).some((r) => r[1] === other[1]), 10000, "the removed stream gone from the list");
      assert.ok(fs.existsSync(other[1]), "its file is untouched");
      assert.match(await s.textOf("#view-workspace .status"), /untouched/);
    }
  } finally {
    await s.end();
  }
});

/** Opens the run item whose file is `file` from the overview. */
async function openRun(s, file) {
  const clicked = await s.exec(
    `const r = [...document.querySelectorAll('#view-workspace tr.item.run')].find(r => r.querySelector('.path').textContent === ${JSON.stringify(file)});
     if (!r) return false; r.querySelector('button.open-item').click(); return true`,
  );
  assert.ok(clicked, `${file} is listed`);
}

test("run view: the demo run's checkpoints as `jcp run verify --json` reports them", async () => {
  const s = await Session.start();
  try {
    const isDemo = (r) => r[0] === "run" && r[1].endsWith(`${path.sep}demo.jcprun`);
    await s.waitFor(async () => (await overview(s)).some(isDemo), 60000, "the demo run in the overview");
    const runPath = (await overview(s)).find(isDemo)[1];
    // Opened from the overview, as a newcomer would.
    await openRun(s, runPath);
    await s.waitFor(async () => (await s.exec("return document.querySelector('#run-verdict') !== null")) === true, 30000, "the run's verdict");
    assert.equal(await s.exec("return document.querySelector('#view-run').hidden"), false);
    const [code, report] = jcp(["run", "verify", runPath]);
    const shown = await s.exec(`return {
      verdict: document.querySelector('#run-verdict .value').textContent,
      rows: [...document.querySelectorAll('.checkpoints-table tbody tr.checkpoint')].map(r => ({
        seq: r.querySelector('.seq').textContent, spent: r.querySelector('.spent').textContent,
        grade: r.querySelector('.spent .grade') ? r.querySelector('.spent .grade').textContent : null,
        remainder: r.querySelector('.remainder').textContent, verdict: r.querySelector('.rverdict').firstChild.textContent,
        amendments: (() => { let n = 0; for (let x = r.nextElementSibling; x && x.classList.contains('amendment-row'); x = x.nextElementSibling) n++; return n; })() })) }`);
    assert.equal(shown.verdict, report.clean ? "clean" : "findings");
    assert.equal(code, report.clean ? 0 : 1);
    assert.equal(shown.rows.length, report.checkpoints.length, "every checkpoint is a row");
    report.checkpoints.forEach((c, i) => {
      const row = shown.rows[i];
      assert.equal(row.seq, String(c.seq));
      assert.equal(row.verdict, c.verdict, `seq ${c.seq} verdict`);
      assert.equal(row.amendments, c.amendments.length, `seq ${c.seq} amendments`);
      if (c.spent === null) assert.equal(row.spent, "not stated", `seq ${c.seq}: no spend stated`);
      else assert.equal(row.grade, c.spent.provenance, `seq ${c.seq}: the spend's provenance`);
      if (c.remainder.state === "unknown") assert.match(row.remainder, /^unknown/, `seq ${c.seq}: remainder unknown, never the budget`);
      else assert.doesNotMatch(row.remainder, /unknown/);
    });
    assert.ok(report.checkpoints.some((c) => c.spent === null), "the demo has a checkpoint without a stated spend");
    await s.shot("run");
    await s.exec("document.querySelector('.checkpoints-table').scrollIntoView(); return true");
    await s.shot("run-checkpoints");
  } finally {
    await s.end();
  }
});

// Issue 18: who stands behind a run's grants, from the files beside the run.
test("run view: a rotated steward's key log, a 2-of-3 threshold issuer, a standing grant's ledger", async () => {
  const s = await Session.start();
  try {
    const find = async (name) => (await overview(s)).find((r) => r[0] === "run" && r[1].endsWith(`${path.sep}${name}.jcprun`));
    await s.waitFor(async () => Boolean(await find("minted-by-standing-grant")), 60000, "the authority demo runs in the overview");
    const show = async (name) => {
      const file = (await find(name))[1];
      await s.exec("document.querySelector('#run-authority')?.remove(); return true");
      await openRun(s, file);
      await s.waitFor(async () => (await s.exec("return document.querySelector('#view-run #run-authority') !== null")) === true, 30000, `${name}'s authority panel`);
      return file;
    };

    // The rotated steward: clean only with its key log, as `jcp run verify --key-log` says.
    const rotated = await show("rotated-steward");
    const log = path.join(path.dirname(rotated), "steward.jcpkeys");
    const [withLog, withReport] = jcp(["run", "verify", rotated, "--key-log", log]);
    const [without] = jcp(["run", "verify", rotated]);
    assert.deepEqual([withLog, withReport.clean, without], [0, true, 1], "the CLI: clean with the log, refused without");
    assert.equal(await s.textOf("#run-verdict .value"), "clean");
    assert.equal(await s.textOf(".run-summary .chip.issuer-rotated"), "rotated identity");
    const events = await s.exec("return [...document.querySelectorAll('.key-log-table tr.key-event')].map(r => [r.querySelector('.num').textContent, Boolean(r.querySelector('.superseded')), Boolean(r.querySelector('.current'))])");
    assert.deepEqual(events, [["0", true, false], ["1", true, false], ["2", false, true]]);
    await s.exec("document.querySelector('#run-authority').scrollIntoView(); return true");
    await s.shot("run-authority-rotated");

    // The threshold board: marked 2-of-3, and its aggregate verifies as any signature.
    await show("threshold-board");
    assert.equal(await s.textOf("#run-verdict .value"), "clean");
    assert.equal(await s.textOf(".run-summary .chip.threshold"), "2-of-3 threshold");
    assert.match(await s.textOf(".threshold-group h4"), /2-of-3/);
    await s.exec("document.querySelector('#run-authority').scrollIntoView(); return true");
    await s.shot("run-authority-threshold");

    // The standing grant: firings and minted budget from the ledger beside the run.
    const minted = await show("minted-by-standing-grant");
    const ledger = jcp(["inspect", path.join(path.dirname(minted), "mint-ledger.jcp")])[1];
    assert.equal(await s.textOf(".standing-table .firings td"), "3 of 5 (2 left)");
    assert.match(JSON.stringify(ledger), /"firings":3/);
    assert.match(await s.textOf(".standing-table .chain td"), /chain-verifies to the standing grant/);
    await s.exec("document.querySelector('#run-authority').scrollIntoView(); return true");
    await s.shot("run-authority-standing");
  } finally {
    await s.end();
  }
});

test("blueprint view: the demo reconcile as `jcp blueprint reconcile --json` reports it", async () => {
  const s = await Session.start();
  try {
    await s.click("#tab-blueprint");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#blueprint-verdict') !== null")) === true, 60000, "the reconcile verdict");
    const shown = await s.exec(`return {
      verdict: document.querySelector('#blueprint-verdict .value').textContent,
      files: [...document.querySelectorAll('.bp-files tbody tr')].map(r => [r.children[0].textContent, r.children[1].textContent]),
      steps: [...document.querySelectorAll('.steps-table tbody tr')].map(r => [r.querySelector('.name').textContent, r.querySelector('.outcome').textContent, r.querySelectorAll('.check').length]),
      notVerified: [...document.querySelectorAll('.not-verified-table tbody td.surface')].map(td => td.textContent),
      clamps: document.querySelectorAll('.clamps-table tbody tr').length }`);
    const file = (what) => shown.files.find((f) => f[0] === what)[1];
    const [code, ev] = jcp([
      "blueprint", "reconcile", file("blueprint"), file("deployment"),
      "--keys", file("trusted keys"), "--host-bounds", file("host bounds"), "--descriptors", file("live tool descriptors"),
    ]);
    assert.equal(shown.verdict, ev.consistent ? "consistent" : "inconsistent");
    assert.equal(code, ev.consistent ? 0 : 1);
    assert.equal(shown.verdict, "consistent", "the demo's first deployment reconciles");
    assert.deepEqual(shown.notVerified, ev.not_verified.map((n) => n.surface), "every surface the CLI did not verify is shown");
    for (const h of ["tenancy", "live_policy", "authority", "effect_ownership", "execution", "billing", "evaluation_truth"]) assert.ok(shown.notVerified.includes(h), h);
    assert.equal(shown.clamps, ev.clamps.length);
    for (const [step, outcome, checks] of shown.steps) {
      const cli = ev.checks.filter((c) => c.step === step);
      assert.equal(checks, cli.length, `${step}: the CLI's checks`);
      if (cli.length === 0) assert.equal(outcome, "not run", `${step} ran no check, so it is not shown as passed`);
    }
    await s.shot("blueprint");
    await s.exec("document.querySelector('.not-verified').scrollIntoView(); return true");
    await s.shot("blueprint-not-verified");
    // The rug-pull deployment: the finding is shown.
    await s.exec("document.querySelectorAll('#view-blueprint .picker .pick')[1].click(); return true");
    await s.waitFor(async () => (await s.text("#blueprint-verdict .value")) === "inconsistent", 20000, "the rug-pull verdict");
    assert.equal(await s.exec("return document.querySelector('.steps-table tr.step.failed .check.fail .code').textContent"), "binding_descriptor_mismatch");
    await s.exec("document.querySelector('.steps-table tr.step.failed').scrollIntoView(); return true");
    await s.shot("blueprint-rugpull");
  } finally {
    await s.end();
  }
});

test("blueprint view: a conformance corpus run shows the matrix `jcp blueprint conformance --json` counts", async () => {
  const s = await Session.start();
  try {
    const corpus = path.resolve("conformance/blueprint");
    const [code, cli] = jcp(["blueprint", "conformance", corpus]);
    await s.click("#tab-blueprint");
    // Issue 34: the corpus is chosen in the native dialog (the field cannot be typed in).
    assert.equal(await s.exec("return document.querySelector('#bp-conformance-path').readOnly"), true);
    await s.exec("const d = document.querySelector('#bp-conformance'); d.open = true; d.scrollIntoView(); document.querySelector('#bp-conformance .browse').click(); return true");
    await chooseInDialog("Open a conformance corpus folder", `${corpus}/`);
    await s.waitFor(async () => (await s.exec("return document.querySelector('#bp-conformance-path').value")) !== "", 20000, "the folder chosen");
    assert.equal((await s.exec("return document.querySelector('#bp-conformance-path').value")).replace(/\/$/, ""), corpus);
    await s.exec("document.querySelector('#bp-conformance-go').click(); return true");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#conformance-verdict') !== null")) === true, 60000, "the conformance verdict");
    assert.equal(await s.textOf("#conformance-verdict .value"), cli.green ? "green" : "not green");
    assert.equal(code, cli.green ? 0 : 1);
    const shown = await s.exec("return [...document.querySelectorAll('.conformance-matrix tr.surface')].map(r => [r.querySelector('.name').textContent, r.querySelector('td.total').textContent])");
    const expected = Object.entries(cli.surfaces).map(([name, t]) => [name, `${t.passed}/${t.passed + t.failed}`]);
    assert.deepEqual(shown, expected, "one row per surface with the CLI's counts");
    assert.deepEqual(cli.missing_surfaces, [], "the own corpus covers the 16-surface floor");
    assert.equal(await s.exec("return document.querySelector('.missing-surfaces') === null"), true);
    await s.exec("document.querySelector('.conformance-matrix').scrollIntoView(); return true");
    await s.shot("blueprint-conformance");
  } finally {
    await s.end();
  }
});

/** Creates the steward key (first time) or unlocks it, on the Steward tab. */
async function unlock(s) {
  await s.click("#tab-steward");
  await s.waitFor(async () => (await s.exec("return document.querySelector('#key-state') !== null")) === true, 20000, "the key panel");
  if (await s.exec("return document.querySelector('#key-create') !== null")) {
    await s.type("#key-pass", "correct horse battery");
    await s.type("#key-pass2", "correct horse battery");
    await s.click("#key-create");
  } else if (await s.exec("return document.querySelector('#key-unlock') !== null")) {
    await s.type("#key-pass", "correct horse battery");
    await s.click("#key-unlock");
  }
  await s.waitFor(async () => (await s.textOf("#key-state")) === "Unlocked for this session", 30000, "the key unlocked");
}

// The steward's job end to end (issue 17): a key, the demo long run on the
// console's own endpoint, a checkpoint, an amendment (a widening refused
// before signing), the run going on under the new ceiling, a revocation
// after a confirmation naming what dies, the run stopping, and its record
// in the Auditor with the amendment and the revocation reflected.
test("steward: key, live run, amend, refused widening, revoke, stop, audit", async () => {
  const s = await Session.start();
  try {
    await unlock(s);
    const did = await s.textOf("#key-did");
    assert.match(did, /^did:key:z6Mk/, "the did:key is shown");
    await s.shot("steward-key");

    // The demo run: a checkpoint arrives and is unmistakable.
    await s.click("#live-start");
    await s.waitFor(async () => (await s.visible("#awaiting-banner")) && (await s.textOf("#awaiting-banner")).includes("awaits your decision"), 60000, "the first checkpoint");
    assert.match(await s.textOf("#awaiting-banner"), /^Checkpoint 0 awaits your decision: spent \d[\d.]* (µJ|mJ|J), \w+; remainder \d[\d.]* (mJ|J)/);
    // Each step's work ran behind the endpoint's gate: the metered calls, with the endpoint's figures.
    const metered = await s.exec("return [...document.querySelectorAll('#live-metered tr.metered-call')].map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent))");
    assert.equal(metered.length, 5, JSON.stringify(metered));
    for (const [, energy, , coverage, gaps, charged] of metered) {
      assert.match(energy, /^\d[\d.]* (µJ|mJ|J)$/);
      assert.equal(coverage, "Partial", "not declared self-contained");
      assert.match(gaps, /not-declared-self-contained/);
      assert.equal(charged, energy, "the charge is the metered figure");
    }
    assert.match(await s.textOf("#live-metered .metered-note"), /5 calls metered .* not its total/);
    await s.exec("document.querySelector('#live-panel').scrollIntoView(); return true");
    await s.shot("live-run-metered");
    // The energy view shows the run's latest metered call beside the machine's windows.
    await s.click("#tab-energy");
    await s.waitFor(async () => (await s.textOf("#energy-live-metered")).includes("step 5: "), 15000, "the live run's line in the energy view");
    assert.match(await s.textOf("#energy-live-metered"), /step 5: \d[\d.]* (µJ|mJ|J) \(\w+, Partial — part of the call's work; gaps: not-declared-self-contained\), metered by its endpoint/);
    await s.shot("energy-live-metered");
    await s.click("#tab-steward");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#steward-badge').hidden")) === false, 5000, "the tab's badge");
    assert.equal(await s.exec("return document.querySelector('#steward-badge').textContent"), "1");
    assert.match(await s.exec("return document.title"), /checkpoint awaits you/);
    await s.shot("steward-checkpoint");

    // Issue 39: the decision panel follows the key at once — "Lock now"
    // disables every signing control, unlocking enables them, without the
    // run being clicked again.
    await s.click("#key-lock");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#amend-sign').disabled && document.querySelector('#approve').disabled")) === true, 5000, "signing disabled once locked");
    assert.equal(await s.exec("return document.querySelector('.key-hint').hidden"), false, "the hint says why");
    await s.shot("steward-locked-panel");
    await unlock(s);
    await s.waitFor(async () => (await s.exec("return !document.querySelector('#amend-sign').disabled && !document.querySelector('#approve').disabled")) === true, 5000, "signing enabled once unlocked");
    assert.equal(await s.exec("return document.querySelector('.key-hint').hidden"), true);

    // Above the remainder (a µJ short of the issued 100 J, and joules were spent) is refused before anything is signed.
    await s.type("#amend-budget", "99999999 µJ");
    await s.click("#amend-sign");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#action-result .result.refused') !== null")) === true, 10000, "the refusal");
    const refusal = await s.textOf("#action-result .result.refused");
    assert.match(refusal, /Refused before signing \(steer-above-remainder\)/, refusal);
    assert.equal(refusal.split("steer-above-remainder").length, 2, `the code is said once: ${refusal}`);
    assert.equal(await s.exec("return document.querySelectorAll('.history-list li.amend').length"), 0, "nothing was signed");
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(await s.exec("return document.querySelector('#amend-budget').value"), "99999999 µJ", "what was typed is kept after a refusal");
    await s.shot("steward-refused");

    // The amendment: 50 J for the rest of the run.
    await s.type("#amend-budget", "50 J");
    await s.click("#amend-sign");
    await s.waitFor(async () => (await s.exec("return document.querySelectorAll('.history-list li.amend').length")) === 1, 10000, "the amendment in the history");
    const signedBy = await s.exec("return document.querySelector('.history-list li.amend .id').title");
    assert.equal(signedBy, did, "the history says who signed");
    // The run goes on under the continuation and stops at its next checkpoint.
    await s.waitFor(async () => (await s.visible("#awaiting-banner")) && (await s.textOf("#awaiting-banner")).startsWith("Checkpoint 1"), 60000, "the second checkpoint");
    const events = await s.textOf("#live-events");
    assert.match(events, /continued under grant .* with a ceiling of 50\.000 J/, events);
    assert.match(await s.textOf("#awaiting-banner"), /remainder 4\d\.\d{3} J/);
    assert.equal(await s.exec("return document.querySelectorAll('#live-metered tr.metered-call').length"), 10);
    // The run's course (issue 39): spend against the ceiling over its two checkpoints, the amendment marked.
    assert.match(await s.textOf("#spend-text"), /^Spent [\d.]+ (µJ|mJ|J) of [\d.]+ J in force at checkpoint 1/);
    assert.ok(await s.exec("return (document.querySelector('#spend-panel svg')?.textContent ?? '').includes('amended')"), "the amendment is marked on the chart");
    await s.exec("document.querySelector('#spend-panel').scrollIntoView(); return true");
    await s.shot("steward-course");
    await s.shot("steward-amended");

    // Revoke the continuation: the confirmation names what dies; the run stops.
    await s.click("#revoke-plan");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#revoke-confirm') !== null")) === true, 10000, "the confirmation");
    assert.ok((await s.exec("return document.querySelectorAll('#revoke-confirm li.dies').length")) >= 1, "every grant that dies is named");
    await s.shot("steward-revoke-confirm");
    await s.click("#revoke-sign");
    await s.waitFor(async () => (await s.textOf("#live-state")) === "stopped", 30000, "the run to stop");
    assert.match(await s.textOf("#live-ended"), /revoked/);
    await s.waitFor(async () => (await s.exec("return document.querySelector('#steward-badge').hidden")) === true, 10000, "the badge to clear");
    await s.shot("steward-stopped");

    // Its record in the Auditor: the amendment and the revocation are there, as `jcp audit --json` says.
    const stream = await s.exec("return [...document.querySelectorAll('.live-facts dt')].find(d => d.textContent === 'record').nextElementSibling.textContent");
    await s.click("#open-in-auditor");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#audit-verdict') !== null")) === true, 60000, "the audit verdict");
    const shown = await readShown(s);
    const cell = (h) => shown.cells.find(([k]) => k === h)?.[1];
    assert.equal(cell("amendments"), "1", "the amendment (the steered grant superseded) is in the record");
    assert.equal(cell("revocation notices"), "1", "the revocation is in the record");
    if (process.env.JCP_E2E_JCP) {
      const r = spawnSync(process.env.JCP_E2E_JCP, ["audit", stream, "--json"], { encoding: "utf8" });
      const cli = JSON.parse(r.stdout);
      assert.equal(shown.verdict, cli.clean ? "clean" : "findings", "the same verdict as `jcp audit --json`");
      assert.equal(cli.receipts.amendments, 1);
      assert.equal(cli.receipts.revocation_notices, 1);
    }
    await s.shot("steward-audit");
  } finally {
    await s.end();
  }
});

// A crash of the agent is shown, not hidden; closing the console stops the
// children it started (issue 17, "Live steering, end to end").
const agents = (what = "jcp agent demo") => {
  const r = spawnSync("pgrep", ["-f", what], { encoding: "utf8" });
  return r.stdout.split("\n").filter(Boolean).map(Number);
};
const backends = () => agents("jcp backend demo");


test("steward: a killed agent reads crashed; closing the console stops its children", async () => {
  const before = new Set(agents());
  const backendsBefore = new Set(backends());
  const s = await Session.start();
  let ended = false;
  try {
    await unlock(s);
    await s.click("#live-start");
    await s.waitFor(async () => (await s.visible("#awaiting-banner")) && (await s.textOf("#awaiting-banner")).includes("awaits your decision"), 60000, "the first checkpoint");
    const mine = agents().filter((p) => !before.has(p));
    assert.equal(mine.length, 1, `one demo agent runs as the console's child: ${mine}`);
    process.kill(mine[0], "SIGKILL");
    await s.waitFor(async () => (await s.textOf("#live-state")) === "crashed", 20000, "the crash to be shown");
    assert.match(await s.textOf("#live-ended"), /ended without saying why .*crashed or was killed/);
    await s.shot("steward-crashed");

    // A second run, then the console closes while it waits at its checkpoint.
    await s.click("#live-start");
    await s.waitFor(async () => agents().filter((p) => !before.has(p)).length === 1, 60000, "the second agent");
    await s.waitFor(async () => (await s.visible("#awaiting-banner")) && (await s.textOf("#awaiting-banner")).includes("awaits your decision"), 60000, "the second run's checkpoint");
    await s.end();
    ended = true;
    const t0 = Date.now();
    while (agents().filter((p) => !before.has(p)).length > 0 && Date.now() - t0 < 15000) await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(agents().filter((p) => !before.has(p)), [], "no demo agent outlives the console");
    while (backends().filter((p) => !backendsBefore.has(p)).length > 0 && Date.now() - t0 < 15000) await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(backends().filter((p) => !backendsBefore.has(p)), [], "no demo backend outlives the console");
  } finally {
    if (!ended) await s.end();
  }
});

// The developer's view (issue 17): a Blueprint opened from disk by the
// app's arguments, its decode error pointing at line and column; the
// Intent panel's hash equal to `jcp intent hash`, and two bindings compared.
test("developer: a broken blueprint from the arguments points at its JSON location; intent hash and compare", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "jcp-dev-"));
  const bp = path.join(dir, "broken.blueprint.json");
  const dep = path.join(dir, "some.deployment.json");
  fs.writeFileSync(bp, '{"blueprint_id": "x",\n  "release_number": 1,,\n  "more": true}');
  fs.writeFileSync(dep, "{}");
  const s = await Session.start(["--blueprint", bp, "--deployment", dep]);
  try {
    await s.waitFor(async () => (await s.exec("return document.querySelector('#blueprint-first-failure-location') !== null")) === true, 30000, "the opened reconcile");
    assert.equal(await s.textOf("#blueprint-verdict .value"), "inconsistent");
    const at = await s.textOf("#blueprint-first-failure-location .where");
    assert.equal(at, "at broken.blueprint.json line 2, column 23 (byte 44)");
    const [, ev] = jcp(["blueprint", "reconcile", bp, dep]);
    assert.equal(ev.first_failure.subject, "byte 44", "the same place `jcp blueprint reconcile` names");
    await s.shot("blueprint-opened-broken");

    const vector = path.resolve("conformance/intent/vectors/compromised-principal.json");
    const doc = JSON.parse(fs.readFileSync(vector, "utf8"));
    await s.click("#tab-intent");
    const paste = (slot, text) =>
      s.exec(`const t = document.querySelector('#intent-text-${slot}'); t.value = arguments[0]; t.dispatchEvent(new Event('input')); return true`, [text]);
    await paste("a", JSON.stringify(doc.binding, null, 2));
    await s.click("#intent-inspect-a");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#intent-hash-a') !== null")) === true, 10000, "the hash of A");
    const shownHash = await s.textOf("#intent-hash-a");
    const bfile = path.join(dir, "binding.json");
    fs.writeFileSync(bfile, JSON.stringify(doc.binding));
    const [code, h] = jcp(["intent", "hash", bfile]);
    assert.equal(code, 0);
    assert.equal(shownHash, h.intent_hash, "the panel's hash is `jcp intent hash`'s");
    assert.equal(await s.textOf("#intent-canonical-a"), h.canonical_json);
    const m = doc.mutations.find((x) => x.path === "action.parameters.amountMinor") ?? doc.mutations[0];
    await paste("b", JSON.stringify(m.binding));
    await s.click("#intent-compare");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#intent-verdict') !== null")) === true, 10000, "the comparison");
    assert.match(await s.textOf("#intent-verdict"), /^Different intents: 1 property differs/);
    assert.equal(await s.exec("return document.querySelector('.intent-diff tbody td.path').textContent"), `$.${m.path}`);
    await s.shot("intent-compare");
    // A refused binding: its rule, no hash.
    await paste("b", JSON.stringify({ ...doc.binding, approved_by: "agent" }));
    await s.click("#intent-inspect-b");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#intent-refusal-b') !== null")) === true, 10000, "the refusal");
    assert.match(await s.textOf("#intent-refusal-b"), /BINDING_UNKNOWN_KEY.*Rule: §3/s);
    assert.equal(await s.exec("return document.querySelector('#intent-hash-b')"), null);
    await s.shot("intent-refused");
  } finally {
    await s.end();
  }
});

// Issue 36: a real agent's MCP tools behind the gate, steered from the
// console. The steward sets a gateway run up (the grant under their key and
// the line to paste), the official MCP Python SDK launches that line against
// `@modelcontextprotocol/server-everything` from npm, the run shows its calls
// with their intent hashes and figures, a held call goes on after the
// steward approves the checkpoint, and a revocation from the console ends it.
test("steward: an MCP gateway run set up here, its calls shown, amended at a checkpoint, revoked", async () => {
  const py = path.resolve("crates/gateway/tests/.venv/bin/python");
  const server = path.resolve("crates/gateway/tests/npm/node_modules/.bin/mcp-server-everything");
  assert.ok(fs.existsSync(py) && fs.existsSync(server), "run scripts/setup.sh: the MCP SDK and server-everything are missing");
  const s = await Session.start();
  let sdk;
  try {
    await unlock(s);
    await s.click("#gateway-start");
    await s.type("#gw-name", "everything");
    await s.type("#gw-upstream", `${server} stdio`);
    await s.type("#gw-resource", "text:everything");
    await s.type("#gw-actions", "echo");
    await s.type("#gw-budget", "100 J");
    await s.type("#gw-every", "2");
    await s.exec(`document.querySelector('#gw-bindings').value = ${JSON.stringify(JSON.stringify({ tools: [{ tool: "echo", action: "echo", system: "everything", operation: "echo", target: "everything:echo", arguments: ["message"] }] }))}; return true`);
    await s.click("#gw-prepare");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#gateway-config') !== null")) === true, 20000, "the line to paste");
    const config = JSON.parse(await s.textOf("#gateway-config"));
    const entry = config.mcpServers.everything;
    assert.ok(entry.args.includes("gateway"), JSON.stringify(entry));
    await s.shot("gateway-prepared");

    // The agent's client launches the line: two calls, the checkpoint, the third held.
    const steps = [1, 2, 3, 4, 5].map((n) => ({ call: "echo", args: { message: `call ${n}` } }));
    const { spawn } = await import("node:child_process");
    let out = "";
    sdk = spawn(py, [path.resolve("crates/gateway/tests/mcp_session.py"), JSON.stringify(steps), entry.command, ...entry.args]);
    sdk.stdout.on("data", (d) => (out += d));
    const done = new Promise((r) => sdk.on("exit", r));
    await s.waitFor(async () => (await s.visible("#gateway-held")) && (await s.textOf("#gateway-state")) === "held", 60000, "the held call at the first checkpoint");
    const rows = await s.exec("return [...document.querySelectorAll('#gateway-calls tr.gateway-call')].map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent))");
    assert.equal(rows.length, 2, JSON.stringify(rows));
    for (const [, tool, hash, verdict, energy, , coverage] of rows) {
      assert.equal(tool, "echo");
      assert.match(hash, /^[0-9a-f]{12}…$/);
      assert.equal(verdict, "allow — done");
      assert.match(energy, /^\d[\d.]* (µJ|mJ|J)$/);
      assert.equal(coverage, "Partial");
    }
    assert.match(await s.textOf("#awaiting-banner"), /^Checkpoint 0 awaits your decision/);
    await s.exec("document.querySelector('#gateway-panel').scrollIntoView(); return true");
    await s.shot("gateway-held");

    // Amend to 50 J (tighter than the issued 100 J): the held call goes on
    // under the continuation's ceiling, until the next checkpoint.
    await s.type("#amend-budget", "50 J");
    await s.click("#amend-sign");
    await s.waitFor(async () => (await s.exec("return document.querySelectorAll('.history-list li.amend').length")) === 1, 10000, "the amendment in the history");
    await s.waitFor(async () => (await s.exec("return document.querySelectorAll('#gateway-calls tr.gateway-call').length")) === 4 && (await s.textOf("#gateway-state")) === "held", 60000, "two more calls and the second hold");
    await s.waitFor(async () => (await s.visible("#awaiting-banner")) && (await s.textOf("#awaiting-banner")).startsWith("Checkpoint 1"), 30000, "the second checkpoint");
    const banner = await s.textOf("#awaiting-banner");
    const remainder = banner.match(/remainder ([\d.]+) J/);
    assert.ok(remainder && Number(remainder[1]) <= 50 && Number(remainder[1]) > 40, `the run goes on under the amended 50 J, not the issued 100 J: ${banner}`);
    await s.exec("document.querySelector('#gateway-panel').scrollIntoView(); return true");
    await s.shot("gateway-amended");

    // Revoke the continuation: the held call is denied `revoked`, sealed, and the session ends.
    await s.click("#revoke-plan");
    await s.waitFor(async () => (await s.exec("return document.querySelector('#revoke-confirm') !== null")) === true, 10000, "the confirmation");
    await s.click("#revoke-sign");
    await done;
    const last = out.split("\n").filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.step === 4);
    assert.equal(last.meta["jcp/code"], "revoked", out);
    await s.waitFor(async () => (await s.textOf("#gateway-state")) === "closed", 30000, "the gateway's session closed");
    assert.match(await s.textOf("#gateway-counts"), /^4 allowed, 1 denied, 0 refused before the gate, 0 lost/);
    await s.exec("document.querySelector('#gateway-panel').scrollIntoView(); return true");
    await s.shot("gateway-revoked");
  } finally {
    if (sdk && sdk.exitCode === null) sdk.kill();
    await s.end();
  }
});

// Issue 39, "fits the window": at the default 1200 × 800 and at the 900 × 600
// minimum, no view scrolls sideways: not the page, and no panel or table box
// inside it (long ids wrap or are shortened with the whole on hover).
test("layout: every view fits 1200 × 800 and 900 × 600 with nothing scrolling sideways", async () => {
  const s = await Session.start();
  try {
    // Let the demo workspace and the meter fill the views first.
    await s.waitFor(async () => (await overview(s)).length >= 4, 60000, "the demo workspace");
    const sideways = () =>
      s.exec(`
        const out = [];
        const de = document.documentElement;
        if (de.scrollWidth > de.clientWidth + 1) out.push('page ' + de.scrollWidth + ' > ' + de.clientWidth);
        for (const e of document.querySelectorAll('main *')) {
          if (e.closest('[hidden]') || e.clientWidth === 0) continue;
          const x = getComputedStyle(e).overflowX;
          if ((x === 'auto' || x === 'scroll') && e.scrollWidth > e.clientWidth + 1) {
            // Name the box and what sticks out of it (the widest descendant past its edge).
            const name = (n) => (n.id ? '#' + n.id : n.tagName.toLowerCase() + (n.classList.length ? '.' + [...n.classList].join('.') : ''));
            const edge = e.getBoundingClientRect().right;
            const past = [...e.querySelectorAll('*')].filter((d) => d.getBoundingClientRect().right > edge + 1);
            const deepest = past.filter((d) => !past.some((o) => o !== d && d.contains(o))).slice(0, 2).map(name);
            out.push(name(e) + ' ' + e.scrollWidth + ' > ' + e.clientWidth + (deepest.length ? ' (' + deepest.join(', ') + ')' : ''));
          }
        }
        return out;`);
    const failures = [];
    for (const [w, h] of [[1200, 800], [900, 600]]) {
      await wd("POST", s.u("/window/rect"), { width: w, height: h });
      await s.waitFor(async () => (await s.exec("return window.innerWidth")) <= w, 10000, `the window at ${w} px`);
      for (const view of ["workspace", "steward", "energy", "auditor", "run", "blueprint", "intent"]) {
        await s.click(`#tab-${view}`);
        await new Promise((r) => setTimeout(r, 700));
        for (const f of await sideways()) failures.push(`${w}×${h} ${view}: ${f}`);
        await s.shot(`fit-${w}-${view}`);
      }
    }
    assert.deepEqual(failures, [], failures.join("\n"));
  } finally {
    await s.end();
  }
});
