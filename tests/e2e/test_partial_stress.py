"""Partial mode under stress (issue 7): 10,000 calls from 8 threads while
a killer thread SIGKILLs a random worker every 20 finished calls (and at
most every 10 ms: paced by the calls, not the clock, so that the share of
calls a kill hits does not grow on a loaded machine). Every call must
either return its own correct result or raise a defined sandbox error
(SandBoxProtocolError, or SandBoxError at shutdown), and nothing may hang:
each call is bounded by timeout=, and the run is watched for progress (the
program reports its count of finished calls every second; a run that
stops finishing calls for a scaled minute fails), not held to a total time,
so that a loaded machine gives a slow pass, not a false failure.

The restart budget and backoff are lowered through the module's constants
(as test_partial.py does) so that the pool keeps restarting workers for the
whole run instead of refusing every call after the sixth death: the test
checks recovery, not the budget. Workers are killed through pidfds, so a
recycled pid can never hit another process.
"""
import os
import pathlib
import random
import subprocess
import textwrap
import threading
import time

import pytest

from conftest import REPO, sb_path, scaled
from test_partial import MAIN_INTERPRETERS, MODULE, RULES, ok, run_app

STRESS = """
    import os, random, signal, sys, threading, time
    import pysandboxes._partial as P
    from pysandboxes import sandboxes, SandBoxError, SandBoxProtocolError
    import sbmod

    P.RESTART_BUDGET = 10 ** 9
    P.BACKOFF_BASE, P.BACKOFF_CAP = 0.001, 0.01
    CALLS, THREADS, KILL_EVERY = int(sys.argv[1]), 8, 20
    SEED, CALL_TIMEOUT = int(sys.argv[2]), float(sys.argv[3])
    counts = {"ok": 0, "protocol": 0, "wrong": 0, "other": []}
    lock = threading.Lock()
    stop = threading.Event()
    kills = [0]

    def caller(k):
        for i in range(k, CALLS, THREADS):
            try:
                r = sbmod.add(i, 1000000)
                key = "ok" if r == i + 1000000 else "wrong"
            except SandBoxProtocolError:
                key = "protocol"
            except BaseException as e:
                with lock:
                    counts["other"].append(repr(e))
                continue
            with lock:
                counts[key] += 1

    def finished():
        with lock:
            return counts["ok"] + counts["protocol"] + counts["wrong"] \
                + len(counts["other"])

    def killer(daemon):
        # a kill at most every 10 ms and every KILL_EVERY finished calls:
        # paced by the calls, so that a loaded machine, where each call
        # takes longer, does not see more of them killed
        rnd = random.Random(SEED)
        mark = 0
        while not stop.wait(0.01):
            if finished() < mark + KILL_EVERY:
                continue
            mark = finished()
            pids = daemon.worker_pids()
            if not pids:
                continue
            pid = rnd.choice(pids)
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                # still one of ours (a pid the pool has not reaped)
                if pid in daemon.worker_pids():
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
                    kills[0] += 1
            except OSError:
                pass
            finally:
                os.close(fd)

    def reporter():
        while not stop.wait(1.0):
            print("progress", finished(), file=sys.stderr, flush=True)

    t0 = time.monotonic()
    threading.Thread(target=reporter, daemon=True).start()
    with sandboxes(workers=4, timeout=CALL_TIMEOUT) as daemon:
        k = threading.Thread(target=killer, args=(daemon,))
        k.start()
        threads = [threading.Thread(target=caller, args=(n,))
                   for n in range(THREADS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        stop.set()
        k.join()
        hung = sum(th.is_alive() for th in threads)
        after = sbmod.add(1, 1)
    took = time.monotonic() - t0
    print(counts["ok"] + counts["protocol"] + len(counts["other"]),
          counts["wrong"], counts["other"][:3], hung, after)
    print("ok", counts["ok"], "protocol", counts["protocol"], "kills",
          kills[0], "seconds", round(took, 1), "seed", SEED, file=sys.stderr)
"""


def _run_watched(python, cwd, argv, stall):
    """Run the stress program; fail only when it stops making progress
    (no new finished call for `stall` seconds), however long it takes."""
    cwd = pathlib.Path(cwd)
    (cwd / "sbmod.py").write_text(MODULE)
    (cwd / "main.py").write_text(textwrap.dedent(STRESS))
    (cwd / ".py-sandboxes").write_text(RULES)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"),
               PYSB_PYTHON_SB=str(sb_path()))
    env.pop("PYTHONSTARTUP", None)
    proc = subprocess.Popen(argv, cwd=str(cwd), env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    err_lines, last = [], [time.monotonic(), -1]

    def read_stderr():
        for line in proc.stderr:
            err_lines.append(line)
            parts = line.split()
            if len(parts) == 2 and parts[0] == "progress":
                if int(parts[1]) > last[1]:
                    last[:] = [time.monotonic(), int(parts[1])]

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    out_box = []
    writer = threading.Thread(target=lambda: out_box.append(
        proc.stdout.read()), daemon=True)
    writer.start()
    while proc.poll() is None:
        time.sleep(0.5)
        if time.monotonic() - last[0] > stall:
            proc.kill()
            proc.wait()
            pytest.fail(f"no call finished for {stall:.0f} s (last count "
                        f"{last[1]}): the pool hung\n" + "".join(
                            err_lines[-20:]))
    reader.join(30)
    writer.join(30)
    stderr = "".join(ln for ln in err_lines
                     if not ln.startswith("progress "))
    return subprocess.CompletedProcess(argv, proc.returncode,
                                       out_box[0] if out_box else "", stderr)


@pytest.mark.parametrize("python", MAIN_INTERPRETERS[:1])
def test_calls_survive_random_worker_kills(python, tmp_cwd):
    calls = 10000
    # the killer's choices are seeded; PYSB_STRESS_SEED replays a failure
    seed = int(os.environ.get("PYSB_STRESS_SEED") or random.randrange(10**6))
    print(f"seed {seed} (PYSB_STRESS_SEED={seed} replays it)")
    res = _run_watched(python, tmp_cwd,
                       [python, "main.py", str(calls), str(seed),
                        str(scaled(10))], stall=scaled(60))
    out = ok(res)
    assert out == f"{calls} 0 [] 0 2\n", res.stderr
    stats = res.stderr.split()
    n_ok, kills = int(stats[stats.index("ok") + 1]), \
        int(stats[stats.index("kills") + 1])
    # the pool recovered all along: most calls succeeded, many kills
    assert kills >= 20, res.stderr
    assert n_ok >= calls // 2, res.stderr

BACKOFF = """
    import pysandboxes._partial as P
    # a streak far past any float range of FACTOR ** n: the delay stays
    # the cap, no OverflowError (a random-kill CI run once hit one)
    print(P.backoff_delay(0), P.backoff_delay(1), P.backoff_delay(2),
          P.backoff_delay(10 ** 6) == P.BACKOFF_CAP,
          P.backoff_delay(10 ** 18) == P.BACKOFF_CAP)
"""


@pytest.mark.parametrize("python", MAIN_INTERPRETERS[:1])
def test_restart_backoff_is_bounded(python, tmp_cwd):
    res = run_app(python, tmp_cwd, BACKOFF, rules=None)
    assert ok(res) == "0.0 0.0 1.0 True True\n"
