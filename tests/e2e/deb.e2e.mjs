// The console's Debian package, installed and started (issue 38). Run by
// tests/e2e/deb.sh, which builds the package from the e2e suite's debug build
// (scripts/package-deb.sh --debug) and sets:
//   JCP_DEB   absolute path of the .deb
//
// Installed with `dpkg-deb -x` into a scratch root (docs/decisions.md,
// "Packaging: the .deb"): the package's files exactly as dpkg would place
// them, without root and without touching the machine's package database;
// its dependencies are checked against what this machine has installed.
// Under CI (CI=true) a missing tool or package fails the test; elsewhere it
// skips it, saying what is missing.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import { spawn, spawnSync } from "node:child_process";

const DEB = process.env.JCP_DEB;
const CI = ["true", "1"].includes((process.env.CI ?? "").toLowerCase());

const has = (cmd) => spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;

/** What the tests need that is missing (tools on PATH, the .deb itself). */
function missing(tools) {
  const out = tools.filter((t) => !has(t)).map((t) => `${t} is not on PATH`);
  if (!DEB || !fs.existsSync(DEB)) out.push(`no .deb at JCP_DEB=${DEB ?? "(unset)"} (bash scripts/package-deb.sh --debug)`);
  return out;
}

/** Skips the test outside CI when something it needs is missing; fails it under CI. */
function need(t, tools) {
  const gone = missing(tools);
  if (gone.length === 0) return true;
  assert.ok(!CI, `CI=true and the package test cannot run: ${gone.join("; ")}`);
  t.skip(gone.join("; "));
  return false;
}

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: "utf8", ...opts });
  assert.equal(r.status, 0, `${cmd} ${args.join(" ")} failed (${r.status ?? r.signal}): ${r.stderr}`);
  return r.stdout;
}

let extracted;
/** The package extracted once into a scratch root: { root, dir }. */
function installed() {
  if (!extracted) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "jcp-deb-"));
    const root = path.join(dir, "root");
    run("dpkg-deb", ["-x", DEB, root]);
    extracted = { dir, root };
  }
  return extracted;
}

/** A desktop entry's [Desktop Entry] keys. */
function desktopKeys(file) {
  const keys = {};
  let inEntry = false;
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (/^\[.*\]$/.test(line.trim())) inEntry = line.trim() === "[Desktop Entry]";
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (inEntry && m) keys[m[1]] = m[2];
  }
  return keys;
}

test("deb: the control file names the package, every dependency is installed here, and apt would install it", (t) => {
  if (!need(t, ["dpkg-deb", "dpkg-query", "apt-get"])) return;
  assert.equal(run("dpkg-deb", ["-f", DEB, "Package"]).trim(), "jcp-console");
  const depends = run("dpkg-deb", ["-f", DEB, "Depends"]).trim();
  assert.match(depends, /libwebkit2gtk-4\.1-0/, `Depends: ${depends}`);
  assert.match(depends, /libgtk-3-0/, `Depends: ${depends}`);
  // What `apt install ./the.deb` would have to satisfy: each dependency (or
  // one of its alternatives) installed on this machine.
  for (const dep of depends.split(",").map((d) => d.trim()).filter(Boolean)) {
    const names = dep.split("|").map((a) => a.trim().split(/[\s(]/)[0]);
    const ok = names.some(
      (n) => spawnSync("dpkg-query", ["-W", "-f=${Status}", n], { encoding: "utf8" }).stdout.includes("install ok installed"),
    );
    assert.ok(ok, `dependency not installed: ${dep}`);
  }
  // `sudo apt install ./the.deb` (the README's), simulated: no root, nothing changed.
  const sim = run("apt-get", ["install", "--simulate", "--no-download", path.resolve(DEB)]);
  assert.match(sim, /^Inst jcp-console /m, sim);
});

test("deb: installs the console and `jcp` side by side, a desktop entry with Name, Exec, Icon, Categories, and its icon", (t) => {
  if (!need(t, ["dpkg-deb"])) return;
  const { root } = installed();
  const bin = path.join(root, "usr/bin");
  for (const b of ["jcp-console", "jcp"]) {
    const st = fs.statSync(path.join(bin, b));
    assert.ok(st.isFile() && (st.mode & 0o111) !== 0, `/usr/bin/${b} is not an executable file`);
  }
  const appsDir = path.join(root, "usr/share/applications");
  const entries = fs.readdirSync(appsDir).filter((f) => f.endsWith(".desktop"));
  assert.equal(entries.length, 1, `desktop entries: ${entries}`);
  const keys = desktopKeys(path.join(appsDir, entries[0]));
  assert.equal(keys.Name, "JCP Console");
  assert.equal(keys.Type, "Application");
  for (const k of ["Exec", "Icon", "Categories"]) assert.ok(keys[k], `${entries[0]} has no ${k}: ${JSON.stringify(keys)}`);
  // Exec runs the installed console (by name on PATH, or by its absolute path).
  const exec = keys.Exec.split(/\s+/)[0];
  assert.ok(["jcp-console", "/usr/bin/jcp-console"].includes(exec), `Exec=${keys.Exec}`);
  assert.match(keys.Categories, /^([A-Za-z-]+;)+$/, `Categories=${keys.Categories}`);
  // The icon is found where a desktop looks for it: hicolor PNGs named after Icon.
  const icons = run("find", [path.join(root, "usr/share/icons/hicolor"), "-name", `${keys.Icon}.png`]).trim().split("\n").filter(Boolean);
  assert.ok(icons.length > 0, `no usr/share/icons/hicolor/*/apps/${keys.Icon}.png`);
});

test("deb: the installed `jcp --version` runs", (t) => {
  if (!need(t, ["dpkg-deb"])) return;
  const { root } = installed();
  const out = run(path.join(root, "usr/bin/jcp"), ["--version"]);
  assert.match(out, /^jcp \d+\.\d+\.\d+/, out);
});

test("deb: the installed console starts under Xvfb and shows its window", async (t) => {
  if (!need(t, ["dpkg-deb", "Xvfb", "xwininfo"])) return;
  const { root, dir } = installed();
  let disp = 90;
  while (fs.existsSync(`/tmp/.X11-unix/X${disp}`)) disp += 1;
  const xvfb = spawn("Xvfb", [`:${disp}`, "-screen", "0", "1280x860x24", "-nolisten", "tcp"], { stdio: "ignore" });
  let app;
  try {
    const env = {
      ...process.env,
      DISPLAY: `:${disp}`,
      NO_AT_BRIDGE: "1",
      WEBKIT_DISABLE_COMPOSITING_MODE: "1",
      JCP_CONSOLE_WORKSPACE: path.join(dir, "workspace"),
    };
    const deadline = (ms) => Date.now() + ms;
    let until = deadline(10000);
    while (!fs.existsSync(`/tmp/.X11-unix/X${disp}`) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    let log = "";
    app = spawn(path.join(root, "usr/bin/jcp-console"), [], { env, stdio: ["ignore", "pipe", "pipe"] });
    app.stdout.on("data", (d) => (log += d));
    app.stderr.on("data", (d) => (log += d));
    let exited = null;
    app.on("exit", (code, sig) => (exited = code ?? sig));
    let window = false;
    until = deadline(60000);
    while (!window && exited === null && Date.now() < until) {
      const tree = spawnSync("xwininfo", ["-root", "-tree"], { env, encoding: "utf8" }).stdout ?? "";
      window = tree.includes('"JCP Console"');
      if (!window) await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(exited, null, `the installed console exited (${exited}) before its window appeared:\n${log}`);
    assert.ok(window, `no window named "JCP Console" on :${disp} within 60 s:\n${log}`);
    // It keeps running with the window up (not a window that closes at once).
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(exited, null, `the installed console exited (${exited}) after showing its window:\n${log}`);
  } finally {
    if (app && app.exitCode === null) app.kill();
    xvfb.kill();
  }
});

test.after(() => {
  if (extracted) fs.rmSync(extracted.dir, { recursive: true, force: true });
});
