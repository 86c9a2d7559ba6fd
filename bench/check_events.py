"""Checks that stock TensorBoard reads the event files in a log directory (e.g. Kiln's).

    /tmp/torchenv/bin/python bench/check_events.py LOGDIR [--expect-tag loss ...]

Loads LOGDIR (the event files directly in it, not in its subfolders) with TensorBoard's
EventAccumulator, keeping every event, and prints each scalar tag's number of points with its
first and last (step, value), each histogram tag's number of histograms and each tensor tag's
number of points. Exits 1 if nothing was read or an expected tag is missing. Needs only the
`tensorboard` package.
"""

import argparse
import sys

from tensorboard.backend.event_processing import event_accumulator


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logdir")
    parser.add_argument("--expect-tag", action="append", default=[], metavar="TAG")
    args = parser.parse_args()

    keep_all = {kind: 0 for kind in event_accumulator.DEFAULT_SIZE_GUIDANCE}
    accumulator = event_accumulator.EventAccumulator(args.logdir, size_guidance=keep_all)
    accumulator.Reload()
    tags = accumulator.Tags()

    # A tag can be left with no points when a session restart purged them all.
    for tag in tags["scalars"]:
        points = accumulator.Scalars(tag)
        line = f"scalar {tag}: {len(points)} points"
        if points:
            first, last = points[0], points[-1]
            line += (
                f", first (step {first.step}, {first.value:g}),"
                f" last (step {last.step}, {last.value:g})"
            )
        print(line)
    for tag in tags["histograms"]:
        histograms = accumulator.Histograms(tag)
        line = f"histogram {tag}: {len(histograms)} histograms"
        if histograms:
            last = histograms[-1]
            line += f", the last (step {last.step}) of {last.histogram_value.num:g} values"
        print(line)
    for tag in tags["tensors"]:  # Scalars written by TensorBoard's summary API land here.
        print(f"tensor {tag}: {len(accumulator.Tensors(tag))} points")

    found = set(tags["scalars"]) | set(tags["histograms"]) | set(tags["tensors"])
    missing = [tag for tag in args.expect_tag if tag not in found]
    if not found:
        print(f"error: no scalars or histograms read from {args.logdir}", file=sys.stderr)
        return 1
    if missing:
        print(f"error: missing tags: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
