-- Issue 34, item 6: a project's own host for tracked links and the open pixel
-- (`track.example.com`), a CNAME to this server's host, proven the project's by a TXT record
-- with its token (`_tidings-tracking.<domain>`), as sender domains are proven by theirs. Until
-- verified, mail uses the server's public URL. One project per host.
CREATE TABLE tracking_domains (
    project_id  TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    domain      TEXT NOT NULL UNIQUE,
    token       TEXT NOT NULL,
    verified_at INTEGER,
    checked_at  INTEGER,
    last_error  TEXT,
    created_at  INTEGER NOT NULL
);

-- A campaign whose links are left as written (no click tracking); per link, `data-notrack`
-- or `clicktracking="off"` on the `<a>` does the same.
ALTER TABLE campaigns ADD COLUMN track_links INTEGER NOT NULL DEFAULT 1;
