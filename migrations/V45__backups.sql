-- Issue 35, item 2: the copies of the database made by the schedule (`[backup] schedule`) and
-- by hand, each checked (`PRAGMA integrity_check` on the copy) before it counts; the oldest
-- scheduled ones are removed past `[backup] keep`.
CREATE TABLE backups (
    id          INTEGER PRIMARY KEY,
    path        TEXT NOT NULL,
    scheduled   INTEGER NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'removed')),
    bytes       INTEGER,
    uploads     INTEGER,
    error       TEXT,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER
);
CREATE INDEX backups_by_start ON backups(scheduled, started_at);
