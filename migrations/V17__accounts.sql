-- Accounts (issue 15): the mail the server sends itself, single-use account tokens and
-- invitations.

-- System mail (verification, password reset, invitations) goes through the same queue as all
-- mail, so it belongs to a project: this one, which has no members and no keys, so no user or
-- API key ever reaches it.
INSERT OR IGNORE INTO projects (id, name, disabled, created_at, updated_at)
    VALUES ('system', 'System mail', 0, 0, 0);

-- Tokens mailed to a user: kept as the SHA-256 digest of the token, deleted when used.
CREATE TABLE account_tokens (
    digest     TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    purpose    TEXT NOT NULL CHECK (purpose IN ('verify_email', 'reset_password')),
    email      TEXT NOT NULL,                  -- the address it was sent to
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX account_tokens_by_user ON account_tokens(user_id, purpose);

-- An invitation to a project for an email with no account yet; the link's token is kept as
-- its digest. Accepting creates the account, adds the member and deletes the row.
CREATE TABLE invitations (
    id         TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    email      TEXT NOT NULL,
    role       TEXT NOT NULL CHECK (role IN ('OWNER', 'ADMIN', 'MEMBER')),
    digest     TEXT NOT NULL UNIQUE,
    invited_by TEXT REFERENCES users(id) ON DELETE SET NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    UNIQUE (project_id, email)
);
