// Times are shown in the user's zone: the tests read them in UTC.
(globalThis as unknown as { process: { env: Record<string, string> } }).process.env.TZ = "UTC";
// Tests mount views themselves; main.ts must not auto-start.
(globalThis as { __JCP_TEST__?: boolean }).__JCP_TEST__ = true;
