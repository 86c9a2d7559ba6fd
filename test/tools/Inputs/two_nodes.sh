#!/usr/bin/env bash
# Two "nodes" on loopback: two kiln-launch runs (node ranks 0 and 1, one process each) meeting
# through node 0's TCP rendezvous store, training ARTIFACT for 50 steps; node 0's process writes
# OUT.csv. Usage: two_nodes.sh ARTIFACT DATA_DIR OUT.csv
set -eu
artifact=$1 data=$2 out=$3
port=$(python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
train=(kiln-train "$artifact" --data "$data" --steps 50 --print-every 50 --timeout 10)
# Node 1 first: its ranks wait for node 0's store to come up.
timeout 120 kiln-launch --nnodes 2 --node-rank 1 --rdzv "127.0.0.1:$port" -- "${train[@]}" > /dev/null 2>&1 &
node1=$!
timeout 120 kiln-launch --nnodes 2 --node-rank 0 --rdzv "127.0.0.1:$port" -- "${train[@]}" --metrics "$out"
wait "$node1"
echo "both nodes finished"
