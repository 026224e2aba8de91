// Tests mount views themselves; main.ts must not auto-start.
(globalThis as { __JCP_TEST__?: boolean }).__JCP_TEST__ = true;
