-- Issue 32, item 4: signup forms. A form makes or updates a contact from a public page (hosted
-- at /f/:id, embedded on another site, or posted to by a custom front) behind spam checks.
CREATE TABLE forms (
    id              TEXT PRIMARY KEY,
    project_id      TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    -- A JSON array of {key, label, type, required}: the custom fields asked besides email.
    fields          TEXT NOT NULL DEFAULT '[]',
    -- A JSON array of topic ids the subscriber may choose.
    topics          TEXT NOT NULL DEFAULT '[]',
    -- NULL: the project's setting (audience_settings.double_opt_in).
    double_opt_in   INTEGER,
    consent_text    TEXT,
    success_message TEXT,
    redirect_url    TEXT,
    -- A JSON array of origins (https://site.example) whose pages may post to the form.
    allowed_origins TEXT NOT NULL DEFAULT '[]',
    submissions     INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX forms_by_project ON forms(project_id, created_at);

-- Proof-of-work challenges already used, until they expire: each solves one submission.
CREATE TABLE spent_challenges (
    signature  TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX spent_challenges_by_expiry ON spent_challenges(expires_at);
