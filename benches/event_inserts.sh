#!/bin/bash
# Instructions SQLite spends on an event insert into a grown database, counted by callgrind, so
# that two sizes of `tidings-bench scale --dir DIR` can be compared whatever the VM's spread:
#
#     benches/event_inserts.sh /tmp/scale-1m/tidings.db
#     benches/event_inserts.sh /tmp/scale-4m/tidings.db
#
# It inserts 20,000 events (COUNT) for the newest 10,000 contacts, two each, interleaved as the
# scale step's seeding interleaves them, with ids and times after every existing one, so that
# every tree is appended to as in the seeding; the triggers and the foreign key run as in the
# app, and the transaction is rolled back, leaving the database as it was. Debian's `sqlite3`
# runs them (a separate build of SQLite: compare two databases with the same one). Each
# statement is parsed anew, about four fifths of the run, so what is printed is `sqlite3_step`
# alone: the execution's instructions an event, and the index seeks' among them.
set -euo pipefail
db=$1
count=${COUNT:-20000}
if [ "$(sqlite3 -readonly "$db" 'SELECT count(*) >= 10000 FROM contacts')" != 1 ]; then
    echo "$db: needs at least 10,000 contacts" >&2
    exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
    echo "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL; BEGIN;"
    sqlite3 -readonly "$db" "
    WITH c AS (SELECT id, project_id, row_number() OVER (ORDER BY seq) - 1 AS i
                 FROM (SELECT * FROM contacts ORDER BY seq DESC LIMIT 10000)),
         k(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM k WHERE k < $count - 1),
         m AS (SELECT max(created_at) AS at FROM events)
    SELECT printf('INSERT INTO events (id, project_id, contact_id, name, data, created_at) VALUES (''01ff%04x-0000-7000-8000-%012x'', ''%s'', ''%s'', ''%s'', ''{\"plan\":\"pro\"}'', %d);',
                  0, k, c.project_id, c.id,
                  CASE k % 3 WHEN 0 THEN 'page.viewed' WHEN 1 THEN 'feature.used' ELSE 'signup' END, m.at + 1 + k)
      FROM k JOIN c ON c.i = k % 10000, m ORDER BY k;"
    echo "ROLLBACK;"
} > "$work/inserts.sql"
valgrind --tool=callgrind --callgrind-out-file="$work/out" sqlite3 "$db" < "$work/inserts.sql" > /dev/null 2>&1
callgrind_annotate --inclusive=yes "$work/out" 2>/dev/null |
    awk -v n="$count" '/:sqlite3_step |:sqlite3BtreeIndexMoveto / {
        gsub(",", "", $1); name = /sqlite3_step/ ? "execution" : "index seeks"
        printf "%-12s %8.0f instructions an event\n", name, $1 / n }'
