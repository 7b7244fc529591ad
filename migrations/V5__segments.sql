-- Segments, their stored membership, what their conditions refer to, and a catalogue of event names.

CREATE TABLE segments (
    id               TEXT PRIMARY KEY,
    project_id       TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name             TEXT NOT NULL,
    -- Derived from the name when the segment is made and never changed, so the names of its
    -- events (`segment.<slug>.entry` / `.exit`) stay the same when it is renamed.
    slug             TEXT NOT NULL,
    description      TEXT,
    type             TEXT NOT NULL CHECK (type IN ('DYNAMIC', 'STATIC')),
    condition        TEXT,                          -- JSON condition tree (DYNAMIC only)
    track_membership INTEGER NOT NULL DEFAULT 0,
    member_count     INTEGER NOT NULL DEFAULT 0,
    counted_at       INTEGER,
    -- A membership computation in progress: the last contact seq done (NULL when idle), and
    -- what the run has found so far. Each batch commits these with its changes, so a run
    -- interrupted by a crash resumes where it stopped and never emits an event twice.
    compute_cursor   INTEGER,
    compute_entered  INTEGER NOT NULL DEFAULT 0,
    compute_exited   INTEGER NOT NULL DEFAULT 0,
    computed_at      INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    UNIQUE (project_id, slug)
);
CREATE INDEX segments_by_project ON segments(project_id, created_at);

-- Members of a STATIC segment, or the stored membership of a tracked DYNAMIC one.
CREATE TABLE segment_members (
    segment_id  TEXT NOT NULL REFERENCES segments(id) ON DELETE CASCADE,
    contact_seq INTEGER NOT NULL REFERENCES contacts(seq) ON DELETE CASCADE,
    added_at    INTEGER NOT NULL,
    PRIMARY KEY (segment_id, contact_seq)
) WITHOUT ROWID;
CREATE INDEX segment_members_by_contact ON segment_members(contact_seq);

-- What a segment's condition names: `field` (a contact field such as `data.plan`), `event`
-- (an event name) or `segment` (another segment's id). Rewritten with the condition; read by
-- the usage endpoints and to refuse deleting a segment another one refers to.
CREATE TABLE segment_refs (
    segment_id TEXT NOT NULL REFERENCES segments(id) ON DELETE CASCADE,
    project_id TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('field', 'event', 'segment')),
    name       TEXT NOT NULL,
    PRIMARY KEY (segment_id, kind, name)
) WITHOUT ROWID;
CREATE INDEX segment_refs_by_name ON segment_refs(project_id, kind, name);

-- The event names of a project with how many events carry each, kept by triggers, so listing
-- names never scans the events.
CREATE TABLE event_names (
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    events     INTEGER NOT NULL DEFAULT 0,
    last_at    INTEGER NOT NULL,
    PRIMARY KEY (project_id, name)
) WITHOUT ROWID;

INSERT INTO event_names (project_id, name, events, last_at)
    SELECT project_id, name, count(*), max(created_at) FROM events GROUP BY project_id, name;

CREATE TRIGGER event_names_insert AFTER INSERT ON events BEGIN
    INSERT INTO event_names (project_id, name, events, last_at) VALUES (new.project_id, new.name, 1, new.created_at)
    ON CONFLICT (project_id, name) DO UPDATE SET events = events + 1, last_at = max(last_at, excluded.last_at);
END;
CREATE TRIGGER event_names_delete AFTER DELETE ON events BEGIN
    UPDATE event_names SET events = events - 1 WHERE project_id = old.project_id AND name = old.name;
    DELETE FROM event_names WHERE project_id = old.project_id AND name = old.name AND events <= 0;
END;
