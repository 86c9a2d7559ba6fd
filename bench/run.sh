#!/bin/sh
# Runs the Kiln benchmark harness with bench/.venv's python (run.py creates the venv on first use).
here=$(cd "$(dirname "$0")" && pwd)
export KILN_BENCH_ARGV0="$0"
if [ -x "$here/.venv/bin/python" ]; then
  exec "$here/.venv/bin/python" "$here/run.py" "$@"
fi
exec python3 "$here/run.py" "$@"
