#!/usr/bin/env python3
"""Instructions a build spends on the measured paths, counted by valgrind's callgrind.

A shared 2-core VM's spread between two runs of one binary is often wider than the difference
between two builds (the track step's CPU a request moved from 110 to 172 us within an hour).
callgrind counts the instructions of the same work the same way each time, whatever else the
machine does, so two builds can be told apart by a few per cent:

    python3 benches/instructions.py --bin target/release/tidings \
        --bench target/release/tidings-bench

1. The perf harness (../shared/perf/lib/driver.py, every load step skipped) bootstraps a
   database: a user, a project, a sender domain verified in its DNS server.
2. The server runs under callgrind on a copy of that database, with smtp-sink as its relay and
   the harness's DNS server; once it answers, the counters are zeroed and read after --track
   tracked requests (a new contact each), then zeroed again and read after --sends sends have
   all reached the relay (DKIM-signed). Each window starts after WARM_UP requests of its kind
   have been answered (and the sends delivered), so that what a process does once is left
   out: the first signature seeds aws-lc's random generator from CPU jitter, about 419 million
   instructions, which over 300 sends would be 1.4 million a message.
3. With --bench, `tidings-bench segments` runs under callgrind on --contacts contacts; the
   counters are zeroed when the seed is done and read after the 3-filter count (the segment's
   creation and seven refreshes).

Needs valgrind, and what ../shared/perf/install.sh installs. Prints one line a figure. With
--keep DIR the dumps are copied there, to read with callgrind_annotate.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PERF = Path(__file__).resolve().parent.parent.parent / "shared" / "perf"
HTML = ('<!doctype html><html><body><h1>Your weekly summary</h1><p>Hello, this is a performance '
        'test message. It has a paragraph of ordinary text, a <a href="https://example.com/welcome'
        '?utm_source=perf">link to follow</a> and a short list.</p><ul><li>First item of the list'
        '</li><li>Second item of the list</li><li>Third item</li></ul><p>Lorem ipsum dolor sit '
        'amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore '
        'magna aliqua.</p><p>Thanks,<br>The Perf Team</p></body></html>')

# Requests of each kind made before its window is counted (see the module's doc).
WARM_UP = 20


def total(dump: Path) -> int:
    """The instructions a callgrind dump counted."""
    text = dump.read_text(errors="replace")
    return int(re.search(r"^(?:summary|totals): (\d+)", text, re.M).group(1))


def newest_dump(folder: Path) -> Path:
    dumps = [p for p in folder.glob("callgrind.out.*.*") if p.suffix[1:].isdigit()]
    return max(dumps, key=lambda p: p.stat().st_mtime)


def kept(dump: Path, keep: Path | None, name: str) -> Path:
    """The dump, copied to --keep's folder as `name` when one was given."""
    if keep is not None:
        shutil.copy(dump, keep / name)
    return dump


def control(flag: str, pid: int) -> None:
    subprocess.run(["callgrind_control", flag, str(pid)], check=True, capture_output=True)


def bootstrap(binary: str, work: Path) -> None:
    skip = ["--skip", "track,csv,delivery,send", "--runs", "1", "--starts", "1"]
    subprocess.run([sys.executable, str(PERF / "lib" / "driver.py"), "--bin", binary, "--work",
                    str(work)] + skip, check=True, capture_output=True, timeout=600)


def server_figures(binary: str, boot: Path, tracks: int, sends: int, keep: Path | None) -> None:
    state = json.loads((boot / "state.json").read_text())
    config = (boot / "main" / "main.toml").read_text()
    port = int(re.search(r"^port = (\d+)", config, re.M).group(1))
    relay = int(re.search(r'\[smtp\]\nhost = "127.0.0.1"\nport = (\d+)', config).group(1))
    dns_port = re.search(r'nameservers = \["127.0.0.1:(\d+)"\]', config).group(1)
    run = boot / "callgrind"
    shutil.copytree(boot / "main" / "db", run / "db")
    procs = []
    try:
        counter = run / "sink.count"
        with open(counter, "wb") as out:
            procs.append(subprocess.Popen(["smtp-sink", "-a", "-c", "-m", "1024", "-t", "300", "-u",
                                           "nobody", f"127.0.0.1:{relay}", "1024"],
                                          stdout=out, stderr=subprocess.DEVNULL))
        port_file = run / "dns.port"
        procs.append(subprocess.Popen([sys.executable, str(PERF / "lib" / "dns_server.py"), "--zone",
                                       str(boot / "dns" / "zone.json"), "--port-file", str(port_file)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 30
        while not port_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        dns = port_file.read_text().strip()
        config = config.replace(str(boot / "main" / "db"), str(run / "db"))
        (run / "main.toml").write_text(config.replace(f"127.0.0.1:{dns_port}", f"127.0.0.1:{dns}"))
        with open(run / "server.log", "wb") as log:
            server = subprocess.Popen(["valgrind", "--tool=callgrind",
                                       f"--callgrind-out-file={run}/callgrind.out.%p", binary, "serve",
                                       "--config", str(run / "main.toml")], stdout=log, stderr=log)
        procs.append(server)
        deadline = time.monotonic() + 300
        while True:
            try:
                probe = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                probe.request("GET", "/health")
                if probe.getresponse().status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the server did not answer under callgrind")
            time.sleep(0.5)
        time.sleep(3)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

        def post(path: str, key: str, body: dict) -> None:
            conn.request("POST", path, body=json.dumps(body),
                         headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
            answer = conn.getresponse()
            answer.read()
            if answer.status >= 300:
                raise SystemExit(f"{path}: HTTP {answer.status}")

        def delivered() -> int:
            found = re.findall(rb"mesg=(\d+)", counter.read_bytes()[-512:])
            return int(found[-1]) if found else 0

        domain = state["domain"]

        def track(n: int) -> None:
            post("/v1/track", state["pk"], {"email": f"u-cg-{n}@perf.test", "event": f"perf_event_{n % 50}",
                                            "data": {"plan": "pro", "seq": n}})

        def send(n: int) -> None:
            post("/v1/send", state["sk"], {"to": f"rcpt-cg-{n}@{domain}", "from": {"name": "Perf",
                                           "email": f"perf@{domain}"}, "subject": f"Perf message {n}",
                                           "body": HTML})

        def wait_delivered(before: int, count: int) -> None:
            """Until `count` sends more than `before` (read ahead of sending them) reached the relay."""
            deadline = time.monotonic() + 1800
            while delivered() - before < count and time.monotonic() < deadline:
                time.sleep(0.5)
            time.sleep(2)
            if delivered() - before < count:
                raise SystemExit(f"only {delivered() - before} of {count} sends reached the relay")

        for n in range(WARM_UP):
            track(tracks + n)
        time.sleep(1)
        control("-z", server.pid)
        for n in range(tracks):
            track(n)
        time.sleep(1)
        control("-d", server.pid)
        print(f"track_instructions_per_request {total(kept(newest_dump(run), keep, 'track.callgrind')) / tracks:.0f}")

        before = delivered()
        for n in range(WARM_UP):
            send(sends + n)
        wait_delivered(before, WARM_UP)
        before = delivered()
        control("-z", server.pid)
        for n in range(sends):
            send(n)
        wait_delivered(before, sends)
        control("-d", server.pid)
        print(f"send_delivered_instructions_per_message {total(kept(newest_dump(run), keep, 'send.callgrind')) / sends:.0f}")
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()


def segment_figure(bench: str, work: Path, contacts: int, keep: Path | None) -> None:
    run = work / "segments"
    run.mkdir()
    child = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={run}/callgrind.out.%p",
                              bench, "segments", "--contacts", str(contacts), "--repeat", "7"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=run)
    try:
        for line in child.stdout:
            if line.startswith("seeded"):
                control("-z", child.pid)
            if line.startswith("count (POST"):
                control("-d", child.pid)
                counted = total(kept(newest_dump(run), keep, "segments.callgrind"))
                print(f"segment_count_instructions_per_contact {counted / 8 / contacts:.1f}")
                return
        raise SystemExit("tidings-bench segments ended before its count")
    finally:
        child.kill()
        child.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the tidings binary")
    ap.add_argument("--bench", help="the tidings-bench binary (the segment count)")
    ap.add_argument("--track", type=int, default=3000, help="tracked requests counted")
    ap.add_argument("--sends", type=int, default=1000, help="sends counted, delivered")
    ap.add_argument("--contacts", type=int, default=200_000, help="contacts the segment counts")
    ap.add_argument("--keep", type=Path, help="a folder to copy the callgrind dumps to")
    args = ap.parse_args()
    keep = args.keep.resolve() if args.keep is not None else None
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    for tool in ("valgrind", "callgrind_control", "smtp-sink"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found (valgrind; ../shared/perf/install.sh)")
    work = Path(tempfile.mkdtemp(prefix="tidings-instructions."))
    try:
        bootstrap(os.path.abspath(args.bin), work)
        server_figures(os.path.abspath(args.bin), work, args.track, args.sends, keep)
        if args.bench:
            segment_figure(os.path.abspath(args.bench), work, args.contacts, keep)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
