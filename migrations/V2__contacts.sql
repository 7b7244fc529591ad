-- Contacts, their custom-field catalogue, the events table, and contact import / bulk jobs.

-- `seq` is the stable rowid (VACUUM keeps an INTEGER PRIMARY KEY), used by the search index and
-- as the tie-break of keyset pagination; `id` is the public identifier.
CREATE TABLE contacts (
    seq           INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    project_id    TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    email         TEXT NOT NULL,                  -- stored lowercased
    subscribed    INTEGER NOT NULL,
    snoozed_until INTEGER,
    data          TEXT NOT NULL DEFAULT '{}',     -- JSON object of custom fields
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    UNIQUE (project_id, email)
);
-- Keyset pagination, newest or oldest first; `subscribed` rides along so a filter on it is
-- checked in the index without reading rows (one index fewer to keep up on every insert).
CREATE INDEX contacts_by_created ON contacts(project_id, created_at, seq, subscribed);

-- Substring search on email: a trigram index (FTS5). New rows are added by the code that inserts
-- them (db::contacts), one at a time or a whole import batch in one statement, which is about
-- ten times cheaper than a trigger firing per row; deletes and email changes use triggers, so
-- cascades are covered.
CREATE VIRTUAL TABLE contacts_email_search USING fts5(
    email, content = 'contacts', content_rowid = 'seq', tokenize = 'trigram', detail = 'none', columnsize = 0
);
CREATE TRIGGER contacts_search_delete AFTER DELETE ON contacts BEGIN
    INSERT INTO contacts_email_search (contacts_email_search, rowid, email) VALUES ('delete', old.seq, old.email);
END;
CREATE TRIGGER contacts_search_update AFTER UPDATE OF email ON contacts WHEN old.email != new.email BEGIN
    INSERT INTO contacts_email_search (contacts_email_search, rowid, email) VALUES ('delete', old.seq, old.email);
    INSERT INTO contacts_email_search (rowid, email) VALUES (new.seq, new.email);
END;

-- Per-project counts, kept by triggers so totals never need a scan.
CREATE TABLE contact_counts (
    project_id TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    total      INTEGER NOT NULL DEFAULT 0,
    subscribed INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TRIGGER contact_counts_insert AFTER INSERT ON contacts BEGIN
    INSERT INTO contact_counts (project_id, total, subscribed) VALUES (new.project_id, 1, new.subscribed)
    ON CONFLICT (project_id) DO UPDATE SET total = total + 1, subscribed = subscribed + new.subscribed;
END;
CREATE TRIGGER contact_counts_delete AFTER DELETE ON contacts BEGIN
    UPDATE contact_counts SET total = total - 1, subscribed = subscribed - old.subscribed
    WHERE project_id = old.project_id;
END;
CREATE TRIGGER contact_counts_update AFTER UPDATE OF subscribed ON contacts
WHEN old.subscribed != new.subscribed BEGIN
    UPDATE contact_counts SET subscribed = subscribed + new.subscribed - old.subscribed
    WHERE project_id = new.project_id;
END;

-- The custom fields seen in a project: dotted path of each leaf under `data`, the type inferred
-- from the first non-null value (never changed afterwards), and how many contacts have it set.
CREATE TABLE contact_fields (
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    path       TEXT NOT NULL,
    type       TEXT NOT NULL CHECK (type IN ('string', 'number', 'boolean', 'date')),
    contacts   INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, path)
) WITHOUT ROWID;

-- Events: tracked by clients (/v1/track) and emitted by the service (contact.subscribed, ...).
CREATE TABLE events (
    id         TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    contact_id TEXT REFERENCES contacts(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    data       TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL
);
CREATE INDEX events_by_project ON events(project_id, created_at);
CREATE INDEX events_by_name ON events(project_id, name, created_at);
CREATE INDEX events_by_contact ON events(contact_id, created_at);

-- Import and bulk jobs as the API shows them; the work itself is a row in `jobs`.
CREATE TABLE contact_jobs (
    id          TEXT PRIMARY KEY,
    project_id  TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    operation   TEXT NOT NULL CHECK (operation IN ('import', 'subscribe', 'unsubscribe', 'delete', 'delete_field')),
    status      TEXT NOT NULL CHECK (status IN ('queued', 'processing', 'completed', 'failed')),
    input       BLOB,                             -- the CSV file, or the JSON list of ids; dropped when done
    cursor      INTEGER NOT NULL DEFAULT 0,       -- where the work resumes (byte offset, list index)
    total       INTEGER NOT NULL DEFAULT 0,
    processed   INTEGER NOT NULL DEFAULT 0,
    imported    INTEGER NOT NULL DEFAULT 0,
    updated     INTEGER NOT NULL DEFAULT 0,
    skipped     INTEGER NOT NULL DEFAULT 0,
    errors      TEXT NOT NULL DEFAULT '[]',
    error_count INTEGER NOT NULL DEFAULT 0,
    failure     TEXT,
    created_at  INTEGER NOT NULL,
    finished_at INTEGER
);
CREATE INDEX contact_jobs_by_project ON contact_jobs(project_id, created_at);
