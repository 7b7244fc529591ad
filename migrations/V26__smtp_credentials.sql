-- Issue 31: credentials other apps sign in to the submission listener with (AUTH PLAIN or LOGIN).
-- The password is a random token shown once; only its SHA-256 digest is kept (as for API keys).
-- The username is unique across projects: it names the credential at AUTH.
CREATE TABLE smtp_credentials (
    id                   TEXT PRIMARY KEY,
    project_id           TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name                 TEXT NOT NULL,
    username             TEXT NOT NULL UNIQUE,
    password_digest      TEXT NOT NULL,
    -- A JSON array of domains the From address may be on (subdomains included); NULL: any
    -- verified domain of the project.
    allowed_from_domains TEXT,
    -- A JSON array of what is tracked by default in mail sent with it: "opens", "clicks".
    track                TEXT NOT NULL DEFAULT '[]',
    created_at           INTEGER NOT NULL,
    last_used_at         INTEGER
);
CREATE INDEX smtp_credentials_by_project ON smtp_credentials(project_id, created_at);
