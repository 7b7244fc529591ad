-- Issue 31: a message submitted over SMTP is kept as the app wrote it, once for all its
-- recipients (as attachment_sets keep a /v1/send's attachments); each recipient's email names
-- it, and delivery adds Tidings' headers and the DKIM signature to these bytes.
CREATE TABLE raw_messages (
    id         TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    content    BLOB NOT NULL,
    -- What its mail tracks: "", "opens", "clicks" or "opens,clicks" (X-Tidings-Track, or the
    -- credential's default).
    track      TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
);
CREATE INDEX raw_messages_by_project ON raw_messages(project_id);
ALTER TABLE emails ADD COLUMN raw_message TEXT;
CREATE INDEX emails_by_raw_message ON emails(raw_message) WHERE raw_message IS NOT NULL;
-- A resubmitted message (same Message-ID to the same recipient) is found and not queued again.
CREATE INDEX emails_by_project_message ON emails(project_id, message_id, to_email);
