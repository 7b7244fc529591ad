-- What comes back after sending (appliance.md §12, issue 14): bounces and complaints find their
-- email by Message-ID, remember the kind of bounce, and suppress the contact for marketing mail.

ALTER TABLE emails ADD COLUMN bounce_type TEXT CHECK (bounce_type IN ('hard', 'soft'));
CREATE INDEX emails_by_message_id ON emails(message_id);

-- A contact that hard-bounced or complained: no MARKETING mail reaches it again, even if it
-- subscribes again.
CREATE TABLE suppressions (
    contact_id TEXT PRIMARY KEY REFERENCES contacts(id) ON DELETE CASCADE,
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    reason     TEXT NOT NULL CHECK (reason IN ('hard_bounce', 'complaint')),
    email_id   TEXT,
    detail     TEXT,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX suppressions_by_project ON suppressions(project_id, created_at);
