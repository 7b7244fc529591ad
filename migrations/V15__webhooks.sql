-- Outbound webhooks (appliance.md §12): endpoints a project's events are POSTed to, signed the
-- Standard Webhooks way, and one durable delivery per (event, endpoint) with its tries.

CREATE TABLE webhook_endpoints (
    id             TEXT PRIMARY KEY,
    project_id     TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    url            TEXT NOT NULL,
    events         TEXT NOT NULL,          -- JSON array of names and prefixes ending in *
    enabled        INTEGER NOT NULL DEFAULT 1,
    description    TEXT,
    secret         TEXT NOT NULL,          -- whsec_<base64>; shown once, used to sign
    failing_since  INTEGER,                -- the first failure since the last success
    disabled_reason TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_by_project ON webhook_endpoints(project_id, created_at);

CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,     -- msg_<uuid>, sent as webhook-id on every try
    endpoint_id      TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    project_id       TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    event_type       TEXT NOT NULL,
    payload          TEXT NOT NULL,        -- the JSON body, fixed when the event is recorded
    status           TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER,
    last_error       TEXT,
    next_attempt_at  INTEGER,
    locked_until     INTEGER,
    created_at       INTEGER NOT NULL,
    completed_at     INTEGER
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries(endpoint_id, created_at);
