"""Helpers shared by the Python client scenarios.

Each scenario is a script run as

    python3 <script>.py BOOTSTRAP TOPIC [REPLICATION_FACTOR]

by internal/interop/python_test.go. It exits 0 once every check passed, and 1 with a
message naming the step and the first mismatch otherwise. The clients' own warnings
and errors (kafka-python's logging, librdkafka's log lines) go to the same output, so
a failing Go test shows what the broker answered.
"""

import logging
import os
import sys
import threading
import time
import traceback

# Stops a scenario that hangs (a group that never forms, a fetch that never returns):
# the Go test has its own timeout, but this one says which step was running.
SCRIPT_TIMEOUT_S = 45.0

# How long a consumer keeps polling after it has every record it expects, to catch
# duplicates and records past the end.
QUIET_S = 0.7

_step = "start"


class Mismatch(Exception):
    """A result differs from what the scenario expects."""


class Args:
    """The command line: brokers (a list of HOST:PORT), topic, replication factor."""

    def __init__(self, argv):
        if len(argv) not in (3, 4):
            sys.stderr.write("usage: python3 <script>.py HOST:PORT[,HOST:PORT...] TOPIC [REPLICATION_FACTOR]\n")
            sys.stdout.flush()
            os._exit(2)
        self.bootstrap = argv[1]
        self.brokers = argv[1].split(",")
        self.topic = argv[2]
        self.rf = int(argv[3]) if len(argv) == 4 else 1


def log(msg):
    now = time.strftime("%H:%M:%S", time.localtime()) + ".%03d" % (time.time() % 1 * 1000)
    sys.stdout.write("[%s] %s\n" % (now, msg))
    sys.stdout.flush()


def step(s):
    """Names what the scenario is doing, for the failure message."""
    global _step
    _step = s
    log("step: " + s)


def check(cond, msg):
    if not cond:
        raise Mismatch(msg)


def equal(got, want, what):
    if got != want:
        raise Mismatch("%s:\n  got  %r\n  want %r" % (what, got, want))


def _overrun(name):
    log("FAIL %s: no result after %.0f s (step: %s)" % (name, SCRIPT_TIMEOUT_S, _step))
    # os._exit: the main thread may be blocked in a client call that never returns.
    os._exit(1)


def run(name, scenario):
    """Runs scenario(Args) and exits: 0 if it returned, 1 if it raised or overran.

    The exit skips interpreter shutdown, where a client left open could block on a
    broker that is gone; scenarios close their clients themselves.
    """
    logging.basicConfig(stream=sys.stdout, level=logging.WARNING,
                        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s")
    args = Args(sys.argv)
    timer = threading.Timer(SCRIPT_TIMEOUT_S, _overrun, (name,))
    timer.daemon = True
    timer.start()
    code = 0
    try:
        scenario(args)
        log("PASS " + name)
    except Mismatch as e:
        log("FAIL %s (step: %s): %s" % (name, _step, e))
        code = 1
    except BaseException:
        log("FAIL %s (step: %s): %s" % (name, _step, traceback.format_exc().rstrip()))
        code = 1
    timer.cancel()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def by_partition(records):
    """Groups records (dicts with 'partition') by partition, keeping their order."""
    out = {}
    for r in records:
        out.setdefault(r["partition"], []).append(r)
    return out


def check_contiguous(records, first, what):
    """Fails unless each partition's records, in the order given, sit at offsets
    first[p], first[p]+1, ...; returns the offset after the last record of each."""
    nxt = dict(first)
    for r in records:
        p = r["partition"]
        want = nxt.get(p, 0)
        check(r["offset"] == want, "%s: record %r acknowledged at partition %d offset %d, want offset %d"
              % (what, r["key"], p, r["offset"], want))
        nxt[p] = want + 1
    return nxt


def poll_until(poll_once, count, what, timeout_s=20.0):
    """Calls poll_once() (which returns a list of records) until count records came,
    then QUIET_S longer to catch extras, and returns them all in the order they came."""
    got = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        check(time.monotonic() < deadline, "%s: %d of %d records after %.0f s" % (what, len(got), count, timeout_s))
        got.extend(poll_once())
    quiet = time.monotonic() + QUIET_S
    while time.monotonic() < quiet:
        got.extend(poll_once())
    log("%s: %d records" % (what, len(got)))
    return got


def diff_records(got, want, what):
    """Fails naming the first position where two record lists differ."""
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            raise Mismatch("%s: record %d of %d:\n  got  %r\n  want %r" % (what, i, len(want), g, w))
    equal(len(got), len(want), what + ": number of records")
