-- Templates, the emails queue, and the capture outbox.

CREATE TABLE templates (
    id          TEXT PRIMARY KEY,
    project_id  TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    description TEXT,
    subject     TEXT NOT NULL,
    body        TEXT NOT NULL,
    from_email  TEXT NOT NULL,
    from_name   TEXT,
    reply_to    TEXT,
    type        TEXT NOT NULL CHECK (type IN ('TRANSACTIONAL', 'MARKETING', 'HEADLESS')),
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX templates_by_project ON templates(project_id, created_at);

-- One row per message. It is written QUEUED in the transaction that accepts the request, and the
-- delivery worker renders, signs and hands it to the relay. `message_id` is fixed here, so a
-- message handed over twice (a crash between the relay's acceptance and the local commit)
-- carries the same Message-ID both times.
CREATE TABLE emails (
    id              TEXT PRIMARY KEY,
    project_id      TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    contact_id      TEXT REFERENCES contacts(id) ON DELETE SET NULL,
    to_email        TEXT NOT NULL,
    to_name         TEXT,
    from_email      TEXT NOT NULL,
    from_name       TEXT,
    reply_to        TEXT,
    subject         TEXT NOT NULL,                 -- Liquid source, rendered at delivery
    body            TEXT NOT NULL,                 -- Liquid source (HTML)
    headers         TEXT NOT NULL DEFAULT '{}',    -- custom headers, JSON object
    attachments     TEXT,                          -- JSON array of {filename, contentType, content}
    variables       TEXT NOT NULL DEFAULT '{}',    -- this request's values (not stored on the contact)
    type            TEXT NOT NULL CHECK (type IN ('TRANSACTIONAL', 'MARKETING', 'HEADLESS')),
    source_type     TEXT NOT NULL,                 -- TRANSACTIONAL (/v1/send), CAMPAIGN, WORKFLOW, TEST
    template_id     TEXT,
    campaign_id     TEXT,
    workflow_id     TEXT,
    status          TEXT NOT NULL CHECK (status IN
                        ('QUEUED', 'SENT', 'DELIVERED', 'OPENED', 'CLICKED', 'BOUNCED', 'COMPLAINED', 'FAILED')),
    message_id      TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    locked_until    INTEGER,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    sent_at         INTEGER,
    opened_at       INTEGER,
    clicked_at      INTEGER,
    failed_at       INTEGER
);
CREATE INDEX emails_queued ON emails(next_attempt_at) WHERE status = 'QUEUED';
CREATE INDEX emails_by_project ON emails(project_id, created_at);
CREATE INDEX emails_by_contact ON emails(contact_id, created_at);

-- Messages kept by the capture transport instead of being sent.
CREATE TABLE outbox (
    id            INTEGER PRIMARY KEY,
    project_id    TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    email_id      TEXT REFERENCES emails(id) ON DELETE SET NULL,
    message_id    TEXT NOT NULL,
    envelope_from TEXT NOT NULL,
    envelope_to   TEXT NOT NULL,
    subject       TEXT NOT NULL,
    raw           BLOB NOT NULL,
    created_at    INTEGER NOT NULL
);
CREATE INDEX outbox_by_project ON outbox(project_id, id);
