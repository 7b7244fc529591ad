-- Foundation schema: accounts, projects, keys, idempotency records, durable jobs, settings.
-- Times are INTEGER milliseconds since the Unix epoch (UTC); ids are UUID strings.

CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    email          TEXT NOT NULL UNIQUE,          -- stored lowercased
    password_hash  TEXT NOT NULL,                 -- bcrypt
    email_verified INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);

CREATE TABLE projects (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    disabled   INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE memberships (
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('OWNER', 'ADMIN', 'MEMBER')),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, user_id)
);
CREATE INDEX memberships_by_user ON memberships(user_id);

-- Keys are found by the SHA-256 digest of the whole key. Public keys are not secret and are kept
-- so the dashboard can show them; secret keys exist only as their digest.
CREATE TABLE api_keys (
    digest       TEXT PRIMARY KEY,
    project_id   TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    kind         TEXT NOT NULL CHECK (kind IN ('public', 'secret')),
    public_value TEXT CHECK ((kind = 'public') = (public_value IS NOT NULL)),
    created_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX api_keys_by_project ON api_keys(project_id);

CREATE TABLE idempotency_keys (
    project_id  TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    key         TEXT NOT NULL,
    request     TEXT NOT NULL,                    -- e.g. "POST /v1/send"
    status_code INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (project_id, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys(expires_at);

-- Durable background work. A worker claims a due job by setting a lease token and locked_until in
-- an IMMEDIATE transaction; a lease that runs out (the worker died) makes the job claimable again.
CREATE TABLE jobs (
    id           INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL,
    payload      TEXT NOT NULL DEFAULT '{}',
    project_id   TEXT REFERENCES projects(id) ON DELETE CASCADE,
    dedupe_key   TEXT UNIQUE,                     -- at most one live job per key (periodic sweeps)
    status       TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
    run_at       INTEGER NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    lease        TEXT,
    locked_until INTEGER,
    last_error   TEXT,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    finished_at  INTEGER
);
CREATE INDEX jobs_queued ON jobs(run_at) WHERE status = 'queued';
CREATE INDEX jobs_running ON jobs(locked_until) WHERE status = 'running';
CREATE INDEX jobs_finished ON jobs(finished_at) WHERE status IN ('done', 'failed');
