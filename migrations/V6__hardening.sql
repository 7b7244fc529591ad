-- Hardening: idempotency keys scoped to the endpoint, and revocable dashboard sessions.

-- A key used on /v1/track no longer blocks the same key on /v1/send: the endpoint ("POST
-- /v1/send") is part of the key.
CREATE TABLE idempotency_keys_new (
    project_id  TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    request     TEXT NOT NULL,                    -- the endpoint, e.g. "POST /v1/send"
    key         TEXT NOT NULL,
    status_code INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (project_id, request, key)
) WITHOUT ROWID;
INSERT INTO idempotency_keys_new (project_id, request, key, status_code, created_at, expires_at)
    SELECT project_id, request, key, status_code, created_at, expires_at FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_new RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys(expires_at);

-- A dashboard session exists while its row does: logout deletes it, a password change or reset
-- deletes all of the user's. The cookie's signed token carries the session id; only its SHA-256
-- digest is kept here.
CREATE TABLE sessions (
    digest     TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_by_user ON sessions(user_id);
CREATE INDEX sessions_by_expiry ON sessions(expires_at);
