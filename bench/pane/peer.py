"""libtmux-mcp 0.1.0a22's wait_for_text on the same scenario as
core/examples/pane_bench/: reaction from a tty write to the result, and
CPU per second of a quiet wait. Prints one JSON object."""
import asyncio
import json
import resource
import sys
import threading
import time

from libtmux_mcp.tools.pane_tools.wait import wait_for_text

socket, pane, tty, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def cpu():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

def react(i):
    text = f"peer-line-{i}"
    t0 = [0.0]
    def writer():
        time.sleep(0.4 + (i * 37 % 50) / 1000)
        with open(tty, "w") as f:
            t0[0] = time.monotonic()
            f.write(text + "\n")
    th = threading.Thread(target=writer)
    th.start()
    r = asyncio.run(wait_for_text(patterns=[text], pane_id=pane, socket_name=socket, timeout=10, interval=0.05))
    done = time.monotonic()
    th.join()
    assert r.found, r
    return (done - t0[0]) * 1000

vals = sorted(react(i) for i in range(rounds))
c0 = cpu()
asyncio.run(wait_for_text(patterns=["never-appears"], pane_id=pane, socket_name=socket, timeout=3, interval=0.05))
print(json.dumps({"peer_p50_ms": vals[len(vals)//2], "peer_mean_ms": sum(vals)/len(vals),
                  "peer_cpu_per_wait_second": (cpu() - c0) / 3}))
