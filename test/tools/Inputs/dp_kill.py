"""Kills a replica of a data-parallel run (SIGKILL) at random points.

usage: dp_kill.py WORK_DIR ARTIFACT DATA_DIR RUNS [STARTUP_SLACK]

Each of RUNS runs starts two processes with kiln-launch and kills one of
them, chosen at random, at a random time; the survivor must stop by itself
within its collective timeout (5 s) plus STARTUP_SLACK seconds (default 1:
a victim killed while starting leaves the survivor waiting from the end of
its own start), naming the dead rank, and nothing may hang. Then a run with --max-restarts is killed mid-way and
must finish with the same losses and final weights as a run never killed.
Prints a summary line per part.
"""
import os
import random
import re
import subprocess
import sys
import time
import zipfile

work, artifact, data, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
TIMEOUT = 5
SLACK = float(sys.argv[5]) if len(sys.argv) > 5 else 1.0
random.seed(1234)
os.makedirs(work, exist_ok=True)


def train(tag, *extra):
    return ["kiln-train", artifact, "--data", data, "--timeout", str(TIMEOUT), "--print-every", "100000",
            "--eval-every", "0", "--metrics", os.path.join(work, tag + ".csv"), *extra]


def launch(args, restarts=0):
    return subprocess.Popen(["kiln-launch", "--nproc-per-node", "2", "--grace", str(TIMEOUT + 3 + SLACK),
                             "--max-restarts", str(restarts), "--", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def pids(process, count):
    """Reads the launcher's 'rank R of N: pid P' lines; returns {rank: pid}."""
    found, lines = {}, []
    while len(found) < count:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        m = re.match(r"kiln-launch: rank (\d+) of \d+: pid (\d+)", line)
        if m:
            found[int(m.group(1))] = int(m.group(2))
    return found, lines


failures, hangs, slowest, named = 0, 0, 0.0, 0
for run in range(runs):
    process = launch(train(f"kill{run}", "--steps", "20000"))
    ranks, lines = pids(process, 2)
    victim = random.randrange(2)
    time.sleep(random.uniform(0.0, 1.0))
    os.kill(ranks[victim], 9)
    killed = time.monotonic()
    try:
        out, _ = process.communicate(timeout=TIMEOUT + 20 + SLACK)
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate()
        hangs += 1
        print(f"run {run}: HANG\n{''.join(lines)}{out}")
        continue
    elapsed = time.monotonic() - killed
    slowest = max(slowest, elapsed)
    text = "".join(lines) + out
    survivor = 1 - victim
    # The survivor names the dead rank, or reports that it never joined.
    says = re.search(rf"rank {survivor} of 2: .*rank {victim}\b.*(died|did not join)", text)
    stopped = f"kiln-launch: rank {victim} (pid {ranks[victim]}) was killed by Killed" in text
    ok = process.returncode != 0 and says is not None and stopped and elapsed <= TIMEOUT + SLACK
    if says:
        named += 1
    if not ok:
        failures += 1
        print(f"run {run}: FAILED (killed rank {victim}, exit {process.returncode}, {elapsed:.1f} s)\n{text}")
print(f"{runs} runs with a replica killed: {runs - failures} stopped with the dead rank named, "
      f"{hangs} hangs, slowest stop {'within' if slowest <= TIMEOUT + SLACK else 'AFTER'} "
      f"the {TIMEOUT} s timeout")
if failures == 0:
    print(f"slowest stop {slowest:.1f} s")

# Restarts: killed mid-way, the group restarts from the last checkpoint.
steps = ["--steps", "6000", "--checkpoint-every", "500"]
reference = os.path.join(work, "reference")
subprocess.run(["kiln-launch", "--nproc-per-node", "2", "--",
                *train("reference", *steps, "--checkpoint-dir", reference)],
               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
restarted = os.path.join(work, "restarted")
process = launch(train("restarted", *steps, "--checkpoint-dir", restarted, "--resume"), restarts=2)
ranks, lines = pids(process, 2)
# Kill once a checkpoint is written (however loaded the machine is), mid-way through the run.
deadline = time.monotonic() + 60
while time.monotonic() < deadline and not any(
        name.startswith("ckpt-") for name in (os.listdir(restarted) if os.path.isdir(restarted) else [])):
    time.sleep(0.01)
time.sleep(0.05)
os.kill(ranks[1], 9)
out, _ = process.communicate(timeout=120)
text = "".join(lines) + out
resumed = re.search(r"resuming from .*ckpt-(\d+)\.npz", text)
same_losses = open(os.path.join(work, "reference.csv")).read() == open(os.path.join(work, "restarted.csv")).read()
def members(path):
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist() if n.endswith(".npy")}
same_state = members(os.path.join(reference, "ckpt-6000.npz")) == members(os.path.join(restarted, "ckpt-6000.npz"))
print(f"restarted run: exit {process.returncode}, "
      f"{'restarted from step ' + resumed.group(1) if resumed else 'NOT RESTARTED'}, "
      f"losses {'identical' if same_losses else 'DIFFERENT'}, "
      f"final state {'identical' if same_state else 'DIFFERENT'} to a run never killed")
if process.returncode != 0 or not resumed:
    print(text)
