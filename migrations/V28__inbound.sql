-- Issue 31: inbound mail. A project receives mail for its inbound domains (verified by an MX
-- record pointing at this server and an ownership TXT record); routes say what becomes of each
-- message; every message received is recorded, and its content kept when a route stores it.
CREATE TABLE inbound_domains (
    id              TEXT PRIMARY KEY,
    project_id      TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    domain          TEXT NOT NULL,
    -- The value of the ownership record `_tidings-inbound.<domain> TXT tidings-inbound=<token>`.
    token           TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'verified')),
    -- The last check's findings, JSON (as `domains.checks`).
    checks          TEXT,
    created_at      INTEGER NOT NULL,
    verified_at     INTEGER,
    last_checked_at INTEGER,
    next_check_at   INTEGER NOT NULL,
    UNIQUE (project_id, domain)
);
-- A domain's mail goes to one project: the first to verify it.
CREATE UNIQUE INDEX inbound_domains_verified ON inbound_domains(domain) WHERE status = 'verified';
CREATE INDEX inbound_domains_due ON inbound_domains(next_check_at);

CREATE TABLE inbound_routes (
    id          TEXT PRIMARY KEY,
    project_id  TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    domain_id   TEXT NOT NULL REFERENCES inbound_domains(id) ON DELETE CASCADE,
    -- The local part matched (lowercase), or `*` for every address of the domain.
    local_part  TEXT NOT NULL,
    -- What is done with a message, JSON: [{"type": "webhook", "url", "endpointId"},
    -- {"type": "forward", "to"}, {"type": "store"}].
    actions     TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (domain_id, local_part)
);
CREATE INDEX inbound_routes_by_project ON inbound_routes(project_id, created_at);

CREATE TABLE inbound_messages (
    id            TEXT PRIMARY KEY,
    project_id    TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    -- The envelope: the sending server's address and greeting, MAIL FROM, and the recipients of
    -- this project (JSON array).
    peer          TEXT NOT NULL,
    helo          TEXT NOT NULL,
    mail_from     TEXT NOT NULL,
    recipients    TEXT NOT NULL,
    from_email    TEXT NOT NULL,
    from_name     TEXT,
    subject       TEXT NOT NULL,
    message_id    TEXT,
    -- Authentication results: pass, fail, softfail, neutral, none, temperror, permerror.
    spf           TEXT NOT NULL,
    dkim          TEXT NOT NULL,
    dmarc         TEXT NOT NULL,
    size          INTEGER NOT NULL,
    -- The sender's contact, and the email of ours it replies to.
    contact_id    TEXT,
    email_id      TEXT,
    -- The message as received; NULL when no route stores it.
    raw           BLOB,
    received_at   INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL
);
CREATE INDEX inbound_messages_by_project ON inbound_messages(project_id, received_at DESC, id DESC);
CREATE INDEX inbound_messages_by_contact ON inbound_messages(contact_id, received_at) WHERE contact_id IS NOT NULL;
CREATE INDEX inbound_messages_expiring ON inbound_messages(expires_at);

-- What a project's received mail takes, so a flood to one project stops at its quota (checked
-- at RCPT) before it fills the disk. Counted whether or not the content is kept: a webhook's
-- delivery carries it too.
CREATE TABLE inbound_usage (
    project_id TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    bytes      INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TRIGGER inbound_usage_added AFTER INSERT ON inbound_messages BEGIN
    INSERT INTO inbound_usage (project_id, bytes) VALUES (new.project_id, new.size)
        ON CONFLICT (project_id) DO UPDATE SET bytes = bytes + new.size;
END;
CREATE TRIGGER inbound_usage_removed AFTER DELETE ON inbound_messages BEGIN
    UPDATE inbound_usage SET bytes = max(bytes - old.size, 0) WHERE project_id = old.project_id;
END;

-- A reply names the email it answers; a campaign counts the emails replied to.
ALTER TABLE emails ADD COLUMN replied_at INTEGER;
ALTER TABLE campaigns ADD COLUMN replied_count INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER campaign_replied AFTER UPDATE OF replied_at ON emails
WHEN new.source_type = 'CAMPAIGN' AND old.replied_at IS NULL AND new.replied_at IS NOT NULL BEGIN
    UPDATE campaigns SET replied_count = replied_count + 1 WHERE id = new.campaign_id;
END;
