// Who stands behind a run's grants (JCP §2.1, §2.2, §4.6), from the files beside the run:
// a rotated steward's key log (which key signs for the identity now, which were rotated away),
// a threshold issuer marked k-of-n, and the standing grant a run's grant was minted from with
// its mint ledger. A file that claims to be such material and is refused is listed, never hidden.
import type { AuthorityView } from "../gen/AuthorityView";
import type { KeyLogPanel } from "../gen/KeyLogPanel";
import type { StandingPanel } from "../gen/StandingPanel";
import type { ThresholdPanel } from "../gen/ThresholdPanel";
import { el, kvTable, shortId, table } from "../format";

const KIND_WORD: Record<AuthorityView["issuer_kind"], string> = {
  key: "did:key",
  rotated: "rotated identity",
  unresolved: "key not resolved",
};

/** The chip beside the steward in the run's summary: k-of-n, rotated, or unresolved. */
export function issuerChips(a: AuthorityView): HTMLElement[] {
  const chips: HTMLElement[] = [];
  if (a.threshold) {
    const c = el("span", "chip threshold", `${a.threshold.threshold} threshold`);
    c.title = `FROST group (${a.threshold.origin}): any ${a.threshold.min_signers} of ${a.threshold.max_signers} shareholders sign together`;
    chips.push(c);
  }
  if (a.issuer_kind !== "key") {
    const c = el("span", `chip issuer-${a.issuer_kind}`, KIND_WORD[a.issuer_kind]);
    c.title = a.issuer_text;
    chips.push(c);
  }
  return chips;
}

function keyLog(k: KeyLogPanel): HTMLElement {
  const box = el("div", "key-log");
  box.append(el("h4", undefined, "Steward's key log (§2.1)"));
  const p = el("p", "key-log-state");
  if (k.refused) {
    p.classList.add("refused");
    p.append(el("strong", undefined, "Refused: "), el("code", "code", k.refused.code), document.createTextNode(` — ${k.refused.message}. No key is taken to control this identity: its grants and amendments are refused.`));
  } else {
    p.append(document.createTextNode(`Identity `), shortId(k.identity, 20), document.createTextNode(` after ${k.rotations ?? 0} rotation(s) is controlled by `), shortId(k.current ?? "", 20), document.createTextNode(". Signatures by a rotated-away key are refused."));
  }
  box.append(p);
  const [t, b] = table("key-log-table", ["seq", "event", "key from here on", "commits to next key", "signature"]);
  for (const e of k.events) {
    const tr = el("tr", `key-event ${e.role}`);
    const id = el("td");
    id.append(el("span", undefined, `${e.role} `), shortId(e.id, 8));
    const cur = el("td");
    const superseded = k.superseded.includes(e.current);
    cur.append(shortId(e.current, 20));
    if (superseded) cur.append(el("span", "superseded", " rotated away"));
    else if (k.current === e.current) cur.append(el("span", "current", " current"));
    const nh = el("td");
    nh.append(shortId(e.next_hash, 8));
    tr.append(el("td", "num", String(e.seq)), id, cur, nh, el("td", e.signature_valid ? "rverdict ok" : "rverdict refused", e.signature_valid ? "valid" : "INVALID"));
    b.append(tr);
  }
  box.append(t, el("p", "path hint", k.path));
  return box;
}

function threshold(t: ThresholdPanel): HTMLElement {
  const box = el("div", "threshold-group");
  box.append(el("h4", undefined, `Threshold issuer: ${t.threshold} (§2.2)`));
  const p = el("p");
  p.append(
    document.createTextNode("The grant's issuer "),
    shortId(t.group, 20),
    document.createTextNode(` is a FROST group made by ${t.origin === "dkg" ? "distributed key generation (no one ever held its key)" : "a trusted dealer"}: any ${t.min_signers} of its ${t.max_signers} shareholders (${t.participants.join(", ")}) sign together, and the result verifies as an ordinary Ed25519 signature.`),
  );
  box.append(p, el("p", "path hint", t.path));
  return box;
}

function standing(s: StandingPanel): HTMLElement {
  const box = el("div", "standing");
  box.append(el("h4", undefined, "Minted by a standing grant (§4.6)"));
  const [t, kv] = kvTable("standing-table");
  kv("standing grant", shortId(s.grant_id, 12));
  kv("its budget", s.grant_budget);
  kv("fired by event class", shortId(s.event_class, 12));
  kv("per firing, at most", s.per_firing);
  kv("firings", `${s.firings} of ${s.max_firings} (${s.firings_left} left)`, "firings");
  kv("minted to children so far", `${s.minted} (budget handed out, not energy measured)`, "minted");
  kv("still mintable", s.mintable, "mintable");
  kv("this run's grant", s.chain_text, s.chain_ok ? "chain ok" : "chain refused");
  box.append(t);
  if (s.refused) {
    const r = el("p", "refused");
    r.append(el("strong", undefined, "Policy or ledger refused: "), el("code", "code", s.refused.code), document.createTextNode(` — ${s.refused.message}`));
    box.append(r);
  }
  box.append(el("p", "path hint", `${s.grant_path} · ${s.policy_path} · ${s.ledger_path}`));
  return box;
}

/** The "who stands behind the grants" panel of the Run and Steward views. */
export function renderAuthority(a: AuthorityView): HTMLElement {
  const panel = el("div", "panel authority");
  panel.id = "run-authority";
  panel.append(el("h3", undefined, "Who stands behind the grants"));
  const who = el("p", `issuer-text issuer-${a.issuer_kind}`);
  who.append(el("strong", undefined, "Steward: "), shortId(a.issuer, 20), document.createTextNode(` — ${a.issuer_text}.`));
  panel.append(who);
  if (a.threshold) panel.append(threshold(a.threshold));
  if (a.key_log) panel.append(keyLog(a.key_log));
  if (a.standing) panel.append(standing(a.standing));
  if (a.problems.length) {
    const box = el("div", "material-problems");
    box.append(el("h4", undefined, `Files beside the run that were refused (${a.problems.length})`));
    const [t, b] = table("problems-table", ["file", "claims to be", "code", "why"]);
    for (const p of a.problems) {
      const tr = el("tr", "problem");
      tr.append(el("td", "path", p.path), el("td", undefined, p.claims), el("td", "code", p.refused.code), el("td", undefined, p.refused.message));
      b.append(tr);
    }
    box.append(t);
    panel.append(box);
  }
  return panel;
}
