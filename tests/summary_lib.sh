# Checks on a run's summary JSON and log, sourced by the end-to-end tests.
# Each exits the test with a FAILED line when the check fails, so that a
# missing summary or a resume that silently trained from step 0 can never
# compare equal to the run it is checked against.

# checksum_of SUMMARY_JSON: prints the summary's model_checksum; exits
# non-zero with a FAILED line on stderr unless the file holds one of 16 hex
# digits (in a command substitution only its subshell exits: without set -e
# write `c=$(checksum_of f) || exit 1`).
checksum_of() {
  python3 - "$1" <<'PY' || exit 1
import json, re, sys
try:
    value = json.load(open(sys.argv[1])).get("model_checksum", "")
except (OSError, ValueError) as e:
    sys.exit(f"FAILED: no summary to read the model_checksum from: {e}")
if not re.fullmatch(r"[0-9a-f]{16}", str(value)):
    sys.exit(f"FAILED: {sys.argv[1]}: model_checksum is {value!r}, not 16 hex digits")
print(value)
PY
}

# expect_resumed LOG SUMMARY_JSON STEP: the run whose output is LOG restored
# the checkpoint of step STEP (its "restored ... (step STEP," line) and
# trained only the steps after it (the summary's train.samples is (steps -
# STEP) x global_batch: a run that ignored its restore trains them all). For
# sources without partial batches (synthetic data, or whole batches a file).
expect_resumed() {
  local log="$1" summary="$2" step="$3"
  grep -q "restored .* (step $step," "$log" \
    || { tail -n 20 "$log"; echo "FAILED: $log: no 'restored ... (step $step,' line"; exit 1; }
  python3 - "$summary" "$step" <<'PY' || exit 1
import json, sys
s, step = json.load(open(sys.argv[1])), int(sys.argv[2])
want = (s["steps"] - step) * s["global_batch"]
if s["train"]["samples"] != want:
    print(f"FAILED: {sys.argv[1]}: trained {s['train']['samples']:g} samples after restoring step "
          f"{step}; want ({s['steps']} - {step}) x {s['global_batch']} = {want}")
    sys.exit(1)
PY
}
