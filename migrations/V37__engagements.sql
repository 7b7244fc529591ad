-- Issue 33, item 3: each open and click of a sent email, as it came, for the campaign report
-- (opens and clicks over time, clicks per link) with machine opens and clicks told apart: a
-- privacy proxy fetching every image on delivery (Apple Mail Privacy Protection), a link
-- scanner, a crawler. `machine` names why, NULL for a person. The email's own status and
-- counters are kept as before; this is the record beside them, at most a few rows an email
-- (core::engagement caps it).
CREATE TABLE email_engagements (
    id          INTEGER PRIMARY KEY,
    project_id  TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    email_id    TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
    campaign_id TEXT,
    kind        TEXT NOT NULL CHECK (kind IN ('open', 'click')),
    url         TEXT,
    machine     TEXT,
    at          INTEGER NOT NULL
);
CREATE INDEX email_engagements_by_email ON email_engagements(email_id, kind);
CREATE INDEX email_engagements_by_campaign ON email_engagements(campaign_id, kind, at) WHERE campaign_id IS NOT NULL;
CREATE INDEX email_engagements_by_project ON email_engagements(project_id, at);
