-- Images uploaded for template and campaign bodies (issue 15): the file is
-- `<data>/uploads/<project_id>/<token>.<ext>`, served at `<public_url>/uploads/<token>.<ext>`.
-- The token (40 random characters) is what makes the address unguessable.
CREATE TABLE uploads (
    token        TEXT PRIMARY KEY,
    project_id   TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    content_type TEXT NOT NULL CHECK (content_type IN ('image/png', 'image/jpeg', 'image/gif', 'image/webp')),
    extension    TEXT NOT NULL,
    bytes        INTEGER NOT NULL,
    created_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX uploads_by_project ON uploads(project_id, created_at);
