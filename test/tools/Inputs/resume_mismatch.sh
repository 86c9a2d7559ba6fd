#!/usr/bin/env bash
# Two processes of one world that resume from different checkpoint directories (as on hosts
# without a shared file system): rank 0's holds a checkpoint of step 5, rank 1's none. Both must
# refuse to train. Usage: resume_mismatch.sh ARTIFACT DATA_DIR WORK_DIR
set -u
artifact=$1 data=$2 work=$3
mkdir -p "$work/rdzv"
kiln-train "$artifact" --data "$data" --steps 5 --checkpoint-dir "$work/ck0" > /dev/null
run() {
  KILN_WORLD_SIZE=2 KILN_RANK=$1 KILN_RENDEZVOUS="$work/rdzv" timeout 60 \
    kiln-train "$artifact" --data "$data" --steps 10 --checkpoint-dir "$work/ck$1" --resume --timeout 10
}
run 1 > "$work/rank1.txt" 2>&1 &
run 0 > "$work/rank0.txt" 2>&1
echo "rank 0 exit $?"
wait $!
echo "rank 1 exit $?"
cat "$work/rank0.txt" "$work/rank1.txt"
