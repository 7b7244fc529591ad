-- Sender reputation (issue 14): what each project sent, and how much of it hard-bounced or drew
-- a complaint, per UTC day, kept by triggers as emails change (statuses only move forward, so
-- each email counts once in each column), and the suspensions that followed.

CREATE TABLE sending_days (
    project_id   TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    day          INTEGER NOT NULL,          -- ms at 00:00 UTC
    sent         INTEGER NOT NULL DEFAULT 0,
    hard_bounces INTEGER NOT NULL DEFAULT 0,
    complaints   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, day)
) WITHOUT ROWID;

CREATE TRIGGER sending_days_sent AFTER UPDATE OF sent_at ON emails
WHEN old.sent_at IS NULL AND new.sent_at IS NOT NULL BEGIN
    INSERT INTO sending_days (project_id, day, sent) VALUES (new.project_id, (new.sent_at / 86400000) * 86400000, 1)
    ON CONFLICT (project_id, day) DO UPDATE SET sent = sent + 1;
END;
CREATE TRIGGER sending_days_hard_bounce AFTER UPDATE OF bounce_type ON emails
WHEN new.bounce_type = 'hard' AND old.bounce_type IS NOT 'hard' BEGIN
    INSERT INTO sending_days (project_id, day, hard_bounces) VALUES (new.project_id, (new.updated_at / 86400000) * 86400000, 1)
    ON CONFLICT (project_id, day) DO UPDATE SET hard_bounces = hard_bounces + 1;
END;
CREATE TRIGGER sending_days_complaint AFTER UPDATE OF status ON emails
WHEN new.status = 'COMPLAINED' AND old.status <> 'COMPLAINED' BEGIN
    INSERT INTO sending_days (project_id, day, complaints) VALUES (new.project_id, (new.updated_at / 86400000) * 86400000, 1)
    ON CONFLICT (project_id, day) DO UPDATE SET complaints = complaints + 1;
END;

CREATE TABLE suspensions (
    id             TEXT PRIMARY KEY,
    project_id     TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    reason         TEXT NOT NULL,
    sent           INTEGER NOT NULL,
    hard_bounces   INTEGER NOT NULL,
    complaints     INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    lifted_at      INTEGER
);
CREATE INDEX suspensions_by_project ON suspensions(project_id, created_at);

-- What was sent before this migration counts too.
INSERT INTO sending_days (project_id, day, sent, complaints)
    SELECT project_id, (sent_at / 86400000) * 86400000, count(*), sum(status = 'COMPLAINED')
    FROM emails WHERE sent_at IS NOT NULL GROUP BY 1, 2;
