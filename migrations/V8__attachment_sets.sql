-- Attachments stored once per request: a /v1/send to fifty recipients with a 10 MiB file keeps
-- one copy, which every recipient's email names, instead of fifty.
CREATE TABLE attachment_sets (
    id         TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    content    TEXT NOT NULL,                    -- JSON array of {filename, contentType, content}
    created_at INTEGER NOT NULL
);
ALTER TABLE emails ADD COLUMN attachment_set TEXT;
CREATE INDEX emails_by_attachment_set ON emails(attachment_set) WHERE attachment_set IS NOT NULL;
