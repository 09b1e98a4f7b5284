#!/usr/bin/env python3
"""Writes the list of functions the daemon runs at start, for the linker to lay them out together
(crates/cli/startup-order.txt; see crates/cli/build.rs). Called by scripts/startup-order.sh.

Usage: startup_order.py OUT BIN [BIN...]

Runs each BIN twice under valgrind's callgrind (a fresh home, then a restart on it), each time
until the first `/health` answer and a while idle (what `scripts/bench.sh startup` measures is
the daemon 3 s after that answer), dumps what ran, and keeps the functions of that BIN's own
text. The list is the union over the binaries (the `release` and `quick` profiles inline
differently, so their names differ; the linker skips names a build does not have), sorted by
name."""
import json, os, re, signal, subprocess, sys, tempfile, time, urllib.request

if len(sys.argv) < 3:  # an empty union would overwrite the list with nothing
    sys.exit("usage: startup_order.py OUT BIN [BIN...]")
OUT, BINS = sys.argv[1], sys.argv[2:]


def run_once(binary, home, work, label):
    env = dict(os.environ, SOUZ_HOME=home, SOUZ_PORT="0", SOUZ_LOG="warn", SOUZ_NO_MODEL_DOWNLOADS="1")
    out = os.path.join(work, f"{label}.%p")
    proc = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}", binary, "serve"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    daemon = os.path.join(home, "daemon.json")
    deadline = time.time() + 180
    while True:
        try:
            with open(daemon) as f:
                info = json.load(f)
            break
        except (OSError, ValueError):
            if proc.poll() is not None or time.time() > deadline:
                sys.exit(f"{label}: the daemon did not start under valgrind")
            time.sleep(0.1)
    with urllib.request.urlopen(info["url"] + "/health", timeout=60) as response:
        if response.status != 200:
            sys.exit(f"{label}: /health answered {response.status}")
    # Under valgrind everything runs some 50 times slower: wait long enough for what starts in
    # the background after the first answer (a function listed but not run costs nothing).
    time.sleep(20)
    subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dump = out.replace("%p", str(proc.pid)) + ".1"
    deadline = time.time() + 60
    while not os.path.exists(dump) or os.path.getsize(dump) == 0:
        if time.time() > deadline:
            sys.exit(f"{label}: callgrind wrote no dump")
        time.sleep(0.2)
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    if os.path.exists(daemon):  # the restart waits for a new one
        os.remove(daemon)
    return dump


def ran(dump):
    """Names of the functions in a callgrind dump (`fn=` and `cfn=`, with its name compression)."""
    names, seen = {}, set()
    for line in open(dump, errors="replace"):
        m = re.match(r"^c?fn=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            if m.group(2):
                names[m.group(1)] = m.group(2)
            seen.add(names.get(m.group(1)))
    return seen


def text_symbols(binary):
    out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    sizes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            sizes[parts[3]] = max(sizes.get(parts[3], 0), int(parts[1], 16))
    return sizes


kept = set()
for binary in BINS:
    with tempfile.TemporaryDirectory() as work:
        home = os.path.join(work, "home")
        os.mkdir(home)
        names = ran(run_once(binary, home, work, "first")) | ran(run_once(binary, home, work, "restart"))
    sizes = text_symbols(binary)
    mine = {n for n in names if n in sizes}
    print(f"{binary}: {len(mine)} functions, {sum(sizes[n] for n in mine) / 1048576:.2f} MiB of code")
    kept |= mine
text = "".join(n + "\n" for n in sorted(kept))
try:
    with open(OUT) as f:
        unchanged = f.read() == text
except OSError:
    unchanged = False
if not unchanged:  # an untouched file spares the next build its link
    with open(OUT, "w") as f:
        f.write(text)
print(f"{len(kept)} functions: {OUT} {'unchanged' if unchanged else 'written'}")
