#!/usr/bin/env bash
# Kill-and-resume check for kiln-train: a run SIGKILLed at random points and
# resumed each time must end with bitwise the same per-step losses (metrics
# CSV) and final state (checkpoint bytes) as a run that was never stopped.
#
#   kill_resume.sh WORKDIR ARTIFACT DATA_DIR KILLS
set -euo pipefail
work=$1 artifact=$2 data=$3 kills=$4
steps=600
train=(kiln-train "$artifact" --data "$data" --steps $steps --checkpoint-every 3 --keep 3
       --eval-every 200 --progress off --seed 5)
rm -rf "$work" && mkdir -p "$work"

"${train[@]}" --checkpoint-dir "$work/ref" --metrics "$work/ref.csv" >"$work/ref.log"

# SIGTERM stops a run after its current step, with a checkpoint of that
# step and exit status 130; the next run resumes exactly there.
"${train[@]}" --checkpoint-dir "$work/run" --metrics "$work/run.csv" >"$work/run-term.log" 2>&1 &
pid=$!
target=$((steps / (2 * (kills + 1))))
for ((wait = 0; wait < 20000; wait++)); do
  kill -0 $pid 2>/dev/null || break
  (($(wc -l <"$work/run.csv" 2>/dev/null || echo 0) > target)) && break
  sleep 0.001
done
kill -TERM $pid 2>/dev/null || true
status=0
wait $pid || status=$?
echo "SIGTERM: exit status $status; $(grep interrupted "$work/run-term.log")"
# Kill i lands once the metrics file passes a step past i / (kills + 1) of the
# run (plus a random offset), wherever the run then is: in a step, a
# checkpoint write, an evaluation.
RANDOM=42
for ((i = 0; i < kills; i++)); do
  target=$(((i + 1) * steps / (kills + 1) + RANDOM % 25))
  "${train[@]}" --resume --checkpoint-dir "$work/run" --metrics "$work/run.csv" \
    --logdir "$work/logs" --summary-every 1 >"$work/run-$i.log" 2>&1 &
  pid=$!
  for ((wait = 0; wait < 20000; wait++)); do # at most ~20 s
    kill -0 $pid 2>/dev/null || break
    (($(wc -l <"$work/run.csv" 2>/dev/null || echo 0) > target)) && break
    sleep 0.001
  done
  kill -9 $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  echo "kill $i: after step $(($(wc -l <"$work/run.csv") - 1)), checkpoints $(ls "$work/run" | tr '\n' ' ')"
done
"${train[@]}" --resume --checkpoint-dir "$work/run" --metrics "$work/run.csv" >"$work/run-final.log"
grep -h "resuming from" "$work"/run-*.log || true

cmp "$work/ref.csv" "$work/run.csv"
cmp "$work/ref/ckpt-$steps.npz" "$work/run/ckpt-$steps.npz"
echo "losses and final state identical over $(($(wc -l <"$work/ref.csv") - 1)) steps"

# A corrupt newest checkpoint is refused by name and the one before it used;
# the step it held is recomputed to the same bytes.
python3 - "$work/run/ckpt-$steps.npz" <<'PY'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
data[len(data) // 2] ^= 0x10
open(path, "wb").write(data)
PY
kiln-train "$artifact" --data "$data" --steps $steps --checkpoint-every 3 --keep 3 \
  --eval-every 0 --progress off --seed 5 --resume --checkpoint-dir "$work/run" \
  --metrics "$work/run.csv" >"$work/corrupt.log" 2>&1
cat "$work/corrupt.log"
cmp "$work/ref/ckpt-$steps.npz" "$work/run/ckpt-$steps.npz"
cmp "$work/ref.csv" "$work/run.csv"
