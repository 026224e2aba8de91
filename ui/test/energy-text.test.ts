import { describe, expect, it } from "vitest";
import { parseEnergy } from "../src/format";
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
