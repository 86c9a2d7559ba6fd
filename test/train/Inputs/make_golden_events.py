"""Writes golden.tfevents, an event file from stock TensorBoard's own writer, for EventsTest.

kiln_train reads event files with a hand-written protobuf decoder; this file checks it against
what the real protobuf library and TensorBoard's writer produce (unknown fields included:
source_metadata on the first event, summary metadata on tensor scalars). Wall times are fixed,
so the output is the same on every run with the same tensorboard version.

Run from the repository root (needs only the `tensorboard` package, not TensorFlow):

    /tmp/torchenv/bin/python test/train/Inputs/make_golden_events.py

and update EventsTest.cpp (test ReadsGoldenFile) if you change what is written.
"""

import os
import shutil
import tempfile
from unittest import mock

from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.scalar import summary_v2 as scalar_summary
from tensorboard.summary.writer import event_file_writer

OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden.tfevents")
START_TIME = 1700000000.0


def scalar_event(step, tag, value):
    summary = summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)]
    )
    return event_pb2.Event(wall_time=START_TIME + step, step=step, summary=summary)


def main():
    logdir = tempfile.mkdtemp()
    try:
        # The writer stamps its first (file_version) event with the current time.
        with mock.patch.object(event_file_writer.time, "time", return_value=START_TIME):
            writer = event_file_writer.EventFileWriter(logdir)
        writer.add_event(
            event_pb2.Event(
                wall_time=START_TIME + 0.5,
                step=1,
                session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START),
            )
        )
        for step, loss, accuracy in [(1, 2.5, 0.25), (2, 1.25, 0.5), (3, 0.625, 0.75)]:
            writer.add_event(scalar_event(step, "loss", loss))
            writer.add_event(scalar_event(step, "accuracy", accuracy))
        # A scalar as TensorBoard's summary API writes it: a float tensor plus plugin metadata.
        writer.add_event(
            event_pb2.Event(
                wall_time=START_TIME + 3,
                step=3,
                summary=scalar_summary.scalar_pb("learning_rate", 0.125),
            )
        )
        # Values -1, -0.75, -0.25, 0.5, 0.5, 2 in buckets ending at -0.5, 0, 1 and 2.
        histo = summary_pb2.HistogramProto(
            min=-1.0,
            max=2.0,
            num=6,
            sum=1.0,
            sum_squares=6.125,
            bucket_limit=[-0.5, 0.0, 1.0, 2.0],
            bucket=[2, 1, 2, 1],
        )
        summary = summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag="weights", histo=histo)]
        )
        writer.add_event(
            event_pb2.Event(wall_time=START_TIME + 3.5, step=3, summary=summary)
        )
        writer.close()
        (name,) = os.listdir(logdir)
        shutil.move(os.path.join(logdir, name), OUTPUT)
    finally:
        shutil.rmtree(logdir)
    print("wrote", OUTPUT)


if __name__ == "__main__":
    main()
