-- Issue 35, item 6: erasure on a data subject's request. What is kept of an erased contact
-- names no person: when it was asked and done, and how much went.
CREATE TABLE erasures (
    id           TEXT PRIMARY KEY,
    project_id   TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    -- The contact's id: a random id, gone with the contact; kept to resume the work.
    contact_id   TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('running', 'done')),
    -- Rows deleted or emptied.
    rows         INTEGER NOT NULL DEFAULT 0,
    requested_at INTEGER NOT NULL,
    finished_at  INTEGER
);
CREATE INDEX erasures_by_project ON erasures(project_id, requested_at);

-- The suppression list takes an erased address as a digest (`erased`: the hex SHA-256 of the
-- project's id, a colon and the normalised address), so mail to it stays blocked and an import
-- skips it without the list naming the person, until the operator lifts it.
CREATE TABLE suppression_list_new (
    id         TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('address', 'domain', 'erased')),
    value      TEXT NOT NULL,
    source     TEXT NOT NULL CHECK (source IN ('bounce', 'complaint', 'manual', 'import', 'erasure')),
    reason     TEXT,
    created_at INTEGER NOT NULL
);
INSERT INTO suppression_list_new SELECT id, project_id, kind, value, source, reason, created_at FROM suppression_list;
DROP TABLE suppression_list;
ALTER TABLE suppression_list_new RENAME TO suppression_list;
CREATE UNIQUE INDEX suppression_list_by_value ON suppression_list(project_id, kind, value);
CREATE INDEX suppression_list_by_time ON suppression_list(project_id, created_at, id);

-- The outbox's messages by recipient, so an erasure finds those of its address.
CREATE INDEX outbox_by_recipient ON outbox(project_id, envelope_to);
