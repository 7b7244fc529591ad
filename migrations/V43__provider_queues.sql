-- Issue 34, item 4: per-provider queues and warm-up.
--
-- The receiving provider's queue an email waits in (`gmail`, `microsoft`, `yahoo`, `apple`, or
-- the recipient's domain), set when the delivery worker first looks at it; and why it is held
-- back when it is (`rate`: the provider's hourly cap; `backoff`: the provider deferred mail;
-- `warmup`: the sender domain's volume for the day is reached), NULL once it goes.
ALTER TABLE emails ADD COLUMN provider TEXT;
ALTER TABLE emails ADD COLUMN held TEXT;

-- A sender domain's warm-up plan: the day's volume grows from `start_daily` to `target_daily`
-- over `days` days from `starts_on` (a date in the project's time zone), then the plan is over.
-- Once a day's volume is sent, marketing mail from the domain waits for the next day.
CREATE TABLE domain_warmups (
    domain_id    TEXT PRIMARY KEY REFERENCES domains(id) ON DELETE CASCADE,
    project_id   TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    start_daily  INTEGER NOT NULL,
    target_daily INTEGER NOT NULL,
    days         INTEGER NOT NULL,
    starts_on    TEXT NOT NULL,
    created_at   INTEGER NOT NULL
);
CREATE INDEX domain_warmups_by_project ON domain_warmups(project_id);

-- What a warm-up's domain sent each day, counted in the transaction that records the send.
CREATE TABLE warmup_days (
    domain_id TEXT NOT NULL REFERENCES domain_warmups(domain_id) ON DELETE CASCADE,
    day       TEXT NOT NULL,
    sent      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (domain_id, day)
) WITHOUT ROWID;
