-- Campaigns, the references registry, and what campaign mail needs of the emails table.

CREATE TABLE campaigns (
    id                 TEXT PRIMARY KEY,
    project_id         TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name               TEXT NOT NULL,
    description        TEXT,
    subject            TEXT NOT NULL,                -- Liquid source, rendered per recipient
    body               TEXT NOT NULL,                -- Liquid source (HTML)
    from_email         TEXT NOT NULL,
    from_name          TEXT,
    reply_to           TEXT,
    type               TEXT NOT NULL CHECK (type IN ('TRANSACTIONAL', 'MARKETING', 'HEADLESS')),
    status             TEXT NOT NULL CHECK (status IN ('DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED')),
    audience_type      TEXT NOT NULL CHECK (audience_type IN ('ALL', 'SEGMENT', 'FILTERED')),
    segment_id         TEXT,
    audience_condition TEXT,                         -- JSON condition tree (FILTERED)
    template_id        TEXT,                         -- the template it was made from, if any
    scheduled_for      INTEGER,
    sent_at            INTEGER,                      -- when sending started
    finished_at        INTEGER,                      -- when the last email left the queue, or cancel
    -- Expansion: the audience is turned into email rows in batches of contacts in `seq` order;
    -- each batch commits its rows with `expand_cursor` (the last seq done), so a restart carries
    -- on after it. `expanded` is set when the contacts run out.
    expand_cursor      INTEGER NOT NULL DEFAULT 0,
    expanded           INTEGER NOT NULL DEFAULT 0,
    total_recipients   INTEGER NOT NULL DEFAULT 0,
    -- Kept by the triggers below, in the transaction that changes the email, so they stay exact.
    sent_count         INTEGER NOT NULL DEFAULT 0,
    failed_count       INTEGER NOT NULL DEFAULT 0,
    delivered_count    INTEGER NOT NULL DEFAULT 0,
    opened_count       INTEGER NOT NULL DEFAULT 0,
    clicked_count      INTEGER NOT NULL DEFAULT 0,
    bounced_count      INTEGER NOT NULL DEFAULT 0,
    complained_count   INTEGER NOT NULL DEFAULT 0,
    unsubscribed_count INTEGER NOT NULL DEFAULT 0,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
);
CREATE INDEX campaigns_by_project ON campaigns(project_id, created_at);

-- Campaign rows carry no copy of the subject and body (the campaign has them), and wait behind
-- transactional mail: `priority` 0 is claimed before 1.
ALTER TABLE emails ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE emails ADD COLUMN unsubscribed_at INTEGER;  -- the recipient unsubscribed through it
DROP INDEX emails_queued;
CREATE INDEX emails_queued ON emails(priority, next_attempt_at) WHERE status = 'QUEUED';
-- One email per contact and campaign: an expansion batch run twice inserts nothing new.
CREATE UNIQUE INDEX emails_campaign_contact ON emails(campaign_id, contact_id)
    WHERE source_type = 'CAMPAIGN';

-- Campaign counters. Statuses only move forward, and each timestamp is set once, so each
-- trigger counts an email at most once.
CREATE TRIGGER campaign_sent AFTER UPDATE OF sent_at ON emails
WHEN new.source_type = 'CAMPAIGN' AND old.sent_at IS NULL AND new.sent_at IS NOT NULL BEGIN
    UPDATE campaigns SET sent_count = sent_count + 1 WHERE id = new.campaign_id;
    UPDATE campaigns SET status = 'SENT', finished_at = new.updated_at
     WHERE id = new.campaign_id AND status = 'SENDING' AND expanded = 1
       AND sent_count + failed_count >= total_recipients;
END;
CREATE TRIGGER campaign_failed AFTER UPDATE OF status ON emails
WHEN new.source_type = 'CAMPAIGN' AND new.status = 'FAILED' AND old.status <> 'FAILED' BEGIN
    UPDATE campaigns SET failed_count = failed_count + 1 WHERE id = new.campaign_id;
    UPDATE campaigns SET status = 'SENT', finished_at = new.updated_at
     WHERE id = new.campaign_id AND status = 'SENDING' AND expanded = 1
       AND sent_count + failed_count >= total_recipients;
END;
CREATE TRIGGER campaign_outcome AFTER UPDATE OF status ON emails
WHEN new.source_type = 'CAMPAIGN' AND new.status IN ('DELIVERED', 'BOUNCED', 'COMPLAINED')
     AND old.status <> new.status BEGIN
    UPDATE campaigns SET
        delivered_count = delivered_count + (new.status = 'DELIVERED'),
        bounced_count = bounced_count + (new.status = 'BOUNCED'),
        complained_count = complained_count + (new.status = 'COMPLAINED')
     WHERE id = new.campaign_id;
END;
CREATE TRIGGER campaign_opened AFTER UPDATE OF opened_at ON emails
WHEN new.source_type = 'CAMPAIGN' AND old.opened_at IS NULL AND new.opened_at IS NOT NULL BEGIN
    UPDATE campaigns SET opened_count = opened_count + 1 WHERE id = new.campaign_id;
END;
CREATE TRIGGER campaign_clicked AFTER UPDATE OF clicked_at ON emails
WHEN new.source_type = 'CAMPAIGN' AND old.clicked_at IS NULL AND new.clicked_at IS NOT NULL BEGIN
    UPDATE campaigns SET clicked_count = clicked_count + 1 WHERE id = new.campaign_id;
END;
CREATE TRIGGER campaign_unsubscribed AFTER UPDATE OF unsubscribed_at ON emails
WHEN new.source_type = 'CAMPAIGN' AND old.unsubscribed_at IS NULL AND new.unsubscribed_at IS NOT NULL BEGIN
    UPDATE campaigns SET unsubscribed_count = unsubscribed_count + 1 WHERE id = new.campaign_id;
END;

-- The references registry: what each segment and campaign (and, later, workflow) names —
-- fields, events, segments, templates, sender domains. It answers every `usage` endpoint and
-- every "in use → 409" check. Rewritten with its owner; dropped with it by the triggers below.
CREATE TABLE refs (
    owner_kind TEXT NOT NULL CHECK (owner_kind IN ('segment', 'campaign', 'workflow')),
    owner_id   TEXT NOT NULL,
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('field', 'event', 'segment', 'template', 'domain')),
    name       TEXT NOT NULL,
    PRIMARY KEY (owner_kind, owner_id, kind, name)
) WITHOUT ROWID;
CREATE INDEX refs_by_name ON refs(project_id, kind, name);
INSERT INTO refs (owner_kind, owner_id, project_id, kind, name)
    SELECT 'segment', segment_id, project_id, kind, name FROM segment_refs;
DROP TABLE segment_refs;
CREATE TRIGGER refs_of_segment AFTER DELETE ON segments BEGIN
    DELETE FROM refs WHERE owner_kind = 'segment' AND owner_id = old.id;
END;
CREATE TRIGGER refs_of_campaign AFTER DELETE ON campaigns BEGIN
    DELETE FROM refs WHERE owner_kind = 'campaign' AND owner_id = old.id;
END;
