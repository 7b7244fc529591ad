#!/usr/bin/env python3
"""The CPU time an event insert costs on a database `tidings-bench scale --dir DIR` kept, run
natively, so that two sizes can be compared on one machine in one sitting:

    python3 benches/event_inserts.py /tmp/scale-1m/tidings.db /tmp/scale-10m/tidings.db

`benches/event_inserts.sh` counts the instructions of such inserts under callgrind; this times
them, to tell whether a size's dearer events spend more instructions or the same instructions
more slowly (caches, the kernel's copies of pages). Each round inserts COUNT events (100,000:
one transaction of the scale step's seeding) for the newest 10,000 contacts, ten each, dealt
round-robin as the seeding deals them, with ids after every existing one and times after the
newest event's (in a scale step's database, the latest), through one
prepared statement (Python's `executemany`, whose per-row cost is the same on every database),
with the app's pragmas (foreign keys, `synchronous=NORMAL`, `temp_store=MEMORY`) and its
triggers, and rolls it back. The databases are taken in turn,
ROUNDS times, and each line is one round's wall, user and system time an event, from
`getrusage`. The first round of each database reads its pages from the disk or the kernel's
cache; compare the later ones.
"""
import argparse
import resource
import sqlite3
import time

INSERT = ("INSERT INTO events (id, project_id, contact_id, name, data, created_at) "
          "VALUES (?, ?, ?, ?, ?, ?)")
NAMES = ("page.viewed", "feature.used", "signup")


def rows(db, count):
    """The round's events: ids and times after the newest event's (by id, its primary key)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    contacts = conn.execute(
        "SELECT id, project_id FROM (SELECT id, project_id, seq FROM contacts "
        "ORDER BY seq DESC LIMIT 10000) ORDER BY seq").fetchall()
    # The newest event is the one with the greatest id (UUIDv7), found by the primary key's index.
    newest, at = conn.execute("SELECT id, created_at FROM events ORDER BY id DESC LIMIT 1").fetchone() or ("0", 0)
    conn.close()
    if len(contacts) < 10000:
        raise SystemExit(f"{db}: needs at least 10,000 contacts")
    prefix = newest[:8]
    return [(f"{prefix}-ffff-7fff-8fff-{k:012x}", contacts[k % len(contacts)][1], contacts[k % len(contacts)][0],
             NAMES[k % 3], '{"plan":"pro"}', at + 1 + k) for k in range(count)]


def round_on(db, events):
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA synchronous=NORMAL")
    # As the app's connections: a statement's journal (the triggers can abort one) in memory, not
    # in a temporary file written a page at a time.
    conn.execute("PRAGMA temp_store=MEMORY")
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany(INSERT, events)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    conn.execute("ROLLBACK")
    conn.close()
    n = len(events) / 1e6
    return wall / n, (after.ru_utime - before.ru_utime) / n, (after.ru_stime - before.ru_stime) / n


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("databases", nargs="+")
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    events = {db: rows(db, args.count) for db in args.databases}
    for r in range(args.rounds):
        for db in args.databases:
            wall, user, system = round_on(db, events[db])
            print(f"round {r + 1} {db}: {wall:.1f} µs wall, user {user:.1f} + system {system:.1f} µs an event")


if __name__ == "__main__":
    main()
