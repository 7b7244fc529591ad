-- Monthly caps and consumption (issue 15): what a project may send and track in a calendar
-- month (UTC), counted by triggers in the transaction that queues the mail or records the event,
-- so the count is exact however many requests race, and refused there when over the cap.

-- A missing row is no cap.
CREATE TABLE billing_limits (
    project_id  TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    category    TEXT NOT NULL CHECK (category IN ('transactional', 'marketing', 'workflow', 'events')),
    monthly_cap INTEGER NOT NULL CHECK (monthly_cap >= 0),
    PRIMARY KEY (project_id, category)
) WITHOUT ROWID;

CREATE TABLE billing_usage (
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    month      INTEGER NOT NULL,              -- yyyymm, UTC
    category   TEXT NOT NULL,
    used       INTEGER NOT NULL,
    PRIMARY KEY (project_id, month, category)
) WITHOUT ROWID;

-- Emails queued by /v1/send, campaigns and workflows; test sends and the server's own mail are
-- not counted. RAISE aborts the insert (and the caller's whole write with it).
CREATE TRIGGER billing_emails AFTER INSERT ON emails
WHEN new.source_type IN ('TRANSACTIONAL', 'CAMPAIGN', 'WORKFLOW') BEGIN
    SELECT RAISE(ABORT, 'BILLING_LIMIT_EXCEEDED:transactional') WHERE new.source_type = 'TRANSACTIONAL' AND EXISTS (
        SELECT 1 FROM billing_limits l WHERE l.project_id = new.project_id AND l.category = 'transactional'
           AND l.monthly_cap <= coalesce((SELECT u.used FROM billing_usage u WHERE u.project_id = new.project_id
               AND u.month = CAST(strftime('%Y%m', new.created_at / 1000, 'unixepoch') AS INTEGER)
               AND u.category = 'transactional'), 0));
    SELECT RAISE(ABORT, 'BILLING_LIMIT_EXCEEDED:marketing') WHERE new.source_type = 'CAMPAIGN' AND EXISTS (
        SELECT 1 FROM billing_limits l WHERE l.project_id = new.project_id AND l.category = 'marketing'
           AND l.monthly_cap <= coalesce((SELECT u.used FROM billing_usage u WHERE u.project_id = new.project_id
               AND u.month = CAST(strftime('%Y%m', new.created_at / 1000, 'unixepoch') AS INTEGER)
               AND u.category = 'marketing'), 0));
    SELECT RAISE(ABORT, 'BILLING_LIMIT_EXCEEDED:workflow') WHERE new.source_type = 'WORKFLOW' AND EXISTS (
        SELECT 1 FROM billing_limits l WHERE l.project_id = new.project_id AND l.category = 'workflow'
           AND l.monthly_cap <= coalesce((SELECT u.used FROM billing_usage u WHERE u.project_id = new.project_id
               AND u.month = CAST(strftime('%Y%m', new.created_at / 1000, 'unixepoch') AS INTEGER)
               AND u.category = 'workflow'), 0));
    INSERT INTO billing_usage (project_id, month, category, used)
    VALUES (new.project_id, CAST(strftime('%Y%m', new.created_at / 1000, 'unixepoch') AS INTEGER),
            CASE new.source_type WHEN 'TRANSACTIONAL' THEN 'transactional' WHEN 'CAMPAIGN' THEN 'marketing'
                 ELSE 'workflow' END, 1)
    ON CONFLICT (project_id, month, category) DO UPDATE SET used = used + 1;
END;

-- Events the app tracks; the service's own (email.*, contact.subscribed and .unsubscribed,
-- segment.<slug>.entry and .exit) are not counted.
CREATE TRIGGER billing_events AFTER INSERT ON events
WHEN NOT (new.name LIKE 'email.%' OR lower(new.name) IN ('contact.subscribed', 'contact.unsubscribed')
          OR new.name LIKE 'segment._%.entry' OR new.name LIKE 'segment._%.exit') BEGIN
    SELECT RAISE(ABORT, 'BILLING_LIMIT_EXCEEDED:events') WHERE EXISTS (
        SELECT 1 FROM billing_limits l WHERE l.project_id = new.project_id AND l.category = 'events'
           AND l.monthly_cap <= coalesce((SELECT u.used FROM billing_usage u WHERE u.project_id = new.project_id
               AND u.month = CAST(strftime('%Y%m', new.created_at / 1000, 'unixepoch') AS INTEGER)
               AND u.category = 'events'), 0));
    INSERT INTO billing_usage (project_id, month, category, used)
    VALUES (new.project_id, CAST(strftime('%Y%m', new.created_at / 1000, 'unixepoch') AS INTEGER), 'events', 1)
    ON CONFLICT (project_id, month, category) DO UPDATE SET used = used + 1;
END;

-- A campaign whose expansion met the marketing cap ends with the recipients queued so far.
ALTER TABLE campaigns ADD COLUMN stopped_reason TEXT;

-- With Stripe configured: the customer a project's checkout made, and its subscription as the
-- last event Stripe sent about it says (`updated_at` is that event's time, so an older event
-- arriving late changes nothing).
CREATE TABLE project_billing (
    project_id          TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    stripe_customer     TEXT NOT NULL,
    stripe_subscription TEXT,
    subscription_status TEXT,
    updated_at          INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX project_billing_by_customer ON project_billing(stripe_customer);
