import { afterEach, describe, expect, it, vi } from "vitest";
import { parseEnergy, shortId } from "../src/format";
// The same cases `jcp::energy::parse_energy` is tested on (crates/jcp/tests/s5_energy_text.rs).
import vectors from "../../conformance/jcp/v1/energy-text.json";

describe("the one energy parser, as the console types it (§5)", () => {
  it("s5_typed_energy_is_read_exactly_or_refused_never_rounded_as_in_rust", () => {
    for (const c of vectors.accept) expect(parseEnergy(c.text), c.text).toEqual({ uj: c.uj });
    for (const c of vectors.refuse) {
      const r = parseEnergy(c.text);
      expect("error" in r, c.text).toBe(true);
      if ("error" in r) expect(r.error.code).toBe("energy-text");
    }
  });
});

describe("a shortened id (issue 39: ids truncate with copy)", () => {
  afterEach(() => vi.unstubAllGlobals());
  it("issue39_a_click_copies_the_whole_id_and_its_title_is_the_whole_id", async () => {
    const writeText = vi.fn(() => Promise.resolve());
    vi.stubGlobal("navigator", { clipboard: { writeText } });
    const id = "09537247cda28018fe871c38db50db4afe1f37db4a8437cba1cbb9bb642c81e7";
    const c = shortId(id);
    expect(c.textContent).toBe("09537247cd…");
    expect(c.title).toBe(id);
    expect(c.getAttribute("role")).toBe("button");
    c.click();
    expect(writeText).toHaveBeenCalledWith(id);
    await Promise.resolve();
    expect(c.classList.contains("copied")).toBe(true);
  });
});
