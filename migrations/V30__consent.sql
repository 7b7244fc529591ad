-- Issue 32, item 3: double opt-in and proof of consent.

-- A project's audience settings: whether its forms ask new subscribers to confirm by default,
-- the template of the confirmation mail (the built-in text when unset or deleted) and the
-- built-in mail's sender.
CREATE TABLE audience_settings (
    project_id               TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    double_opt_in            INTEGER NOT NULL DEFAULT 0,
    confirmation_template_id TEXT REFERENCES templates(id) ON DELETE SET NULL,
    -- The built-in mail's sender, at a verified domain of the project; when unset, noreply@
    -- the project's first verified domain.
    confirmation_from        TEXT,
    updated_at               INTEGER NOT NULL
);
-- A template's deletion finds the settings that name it through this, not a scan.
CREATE INDEX audience_settings_by_template ON audience_settings(confirmation_template_id)
    WHERE confirmation_template_id IS NOT NULL;

-- A subscription asked for with confirmation: the contact gets it (marketing mail and `topics`)
-- only when the mailed link is followed and its page's button pressed, before `expires_at`.
-- A contact has at most one open request; a later one joins it.
CREATE TABLE confirmations (
    id           TEXT PRIMARY KEY,
    project_id   TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    contact_seq  INTEGER NOT NULL REFERENCES contacts(seq) ON DELETE CASCADE,
    -- A JSON array of topic ids.
    topics       TEXT NOT NULL DEFAULT '[]',
    -- How it was asked: api, form, import.
    method       TEXT NOT NULL,
    form_id      TEXT,
    ip           TEXT,
    user_agent   TEXT,
    consent_text TEXT,
    requested_at INTEGER NOT NULL,
    -- When the last confirmation mail was queued: a later request within the cool-down is
    -- recorded without another mail, so no one can flood an address through a form.
    mailed_at    INTEGER,
    expires_at   INTEGER NOT NULL,
    confirmed_at INTEGER
);
CREATE UNIQUE INDEX confirmations_open ON confirmations(contact_seq) WHERE confirmed_at IS NULL;
-- A contact's deletion finds its requests, open or not, through this.
CREATE INDEX confirmations_by_contact ON confirmations(contact_seq);
CREATE INDEX confirmations_by_project ON confirmations(project_id);

-- Proof of consent: one row per grant, for marketing mail (topic_id NULL) or one topic. It
-- outlives the topic (its name is copied), not the contact: erasing a contact erases its record.
CREATE TABLE consents (
    seq                INTEGER PRIMARY KEY,
    project_id         TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    contact_seq        INTEGER NOT NULL REFERENCES contacts(seq) ON DELETE CASCADE,
    topic_id           TEXT,
    topic_name         TEXT,
    -- api, form, import, preference_centre, dashboard.
    method             TEXT NOT NULL,
    form_id            TEXT,
    ip                 TEXT,
    user_agent         TEXT,
    consent_text       TEXT,
    requested_at       INTEGER NOT NULL,
    -- Set when the grant was confirmed by a mailed link (double opt-in), with who pressed it.
    confirmed_at       INTEGER,
    confirm_ip         TEXT,
    confirm_user_agent TEXT
);
CREATE INDEX consents_by_contact ON consents(contact_seq, seq);
CREATE INDEX consents_by_project ON consents(project_id, seq);
