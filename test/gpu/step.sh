# Sourced by the GPU check scripts (device-check.sh, conformance-check.sh), which set `logs`.
# step NAME COMMAND...: runs COMMAND with its output in $logs/NAME.log, counts a failure in
# `failures`, and prints its exit status, its time, the FAIL and REGRESSION lines of its log (at
# most 20) and the log's last ${TAIL:-12} lines.
failures=0

step() {
  local name=$1
  shift
  local start=$SECONDS
  "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  ((rc == 0)) || failures=$((failures + 1))
  echo "== $name: exit $rc in $((SECONDS - start)) s"
  grep -E '^(FAIL|REGRESSION) ' "$logs/$name.log" | head -n 20
  tail -n "${TAIL:-12}" "$logs/$name.log"
}
