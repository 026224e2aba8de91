# Sourced by tests/e2e/run.sh with a scratch folder as $1: writes a clean and
# a tampered stream with the `jcp` CLI and records `jcp audit --json` of
# each, for the e2e test to compare with what the console shows.
e2e_tmp="$1"
JCP="${CARGO_TARGET_DIR:-$PWD/target}/debug/jcp"
cargo build --locked -q -p jcp-cli --bin jcp || { echo "e2e: the jcp CLI does not build"; exit 2; }
"$JCP" stream demo "$e2e_tmp/good.jcps" --receipts 300 --seed 7 --fast >/dev/null
"$JCP" stream demo "$e2e_tmp/bad.jcps" --receipts 300 --seed 8 --tamper 4 --fast >/dev/null
# Exit 1 means findings (expected for the tampered stream); 2 would be an error.
"$JCP" audit "$e2e_tmp/good.jcps" --json >"$e2e_tmp/good.json" || [ $? -eq 1 ]
"$JCP" audit "$e2e_tmp/bad.jcps" --json >"$e2e_tmp/bad.json" || [ $? -eq 1 ]
export JCP_E2E_JCP="$JCP"
export JCP_E2E_GOOD="$e2e_tmp/good.jcps" JCP_E2E_GOOD_JSON="$e2e_tmp/good.json"
export JCP_E2E_BAD="$e2e_tmp/bad.jcps" JCP_E2E_BAD_JSON="$e2e_tmp/bad.json"
