-- Issue 35, item 1: retention. What a project keeps, and for how long, when it differs from
-- the server's `[retention]` defaults (NULL: the default).
CREATE TABLE retention_settings (
    project_id              TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    email_content_days      INTEGER CHECK (email_content_days BETWEEN 1 AND 36500),
    events_days             INTEGER CHECK (events_days BETWEEN 1 AND 36500),
    inbound_days            INTEGER CHECK (inbound_days BETWEEN 1 AND 36500),
    webhook_deliveries_days INTEGER CHECK (webhook_deliveries_days BETWEEN 1 AND 36500),
    updated_at              INTEGER NOT NULL
);

-- A row here while the pruning job deletes events, inside its own transaction only: events
-- that age out leave the hourly rollups analytics read as they are (a deletion by name still
-- takes its events out of them).
CREATE TABLE retention_pruning (one INTEGER PRIMARY KEY CHECK (one = 1));

DROP TRIGGER event_hours_delete;
CREATE TRIGGER event_hours_delete AFTER DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM retention_pruning)
BEGIN
    UPDATE event_hours SET events = events - 1
     WHERE project_id = old.project_id AND hour = (old.created_at / 3600000) * 3600000 AND name = old.name;
END;

-- The emails whose content is still kept (a campaign's emails keep none of their own: the
-- worker reads the campaign), so the pruning finds the next ones through an index that only
-- holds them.
CREATE INDEX emails_with_content ON emails(project_id, created_at)
    WHERE body != '' OR variables != '{}' OR headers != '{}' OR attachments IS NOT NULL;
CREATE INDEX outbox_by_age ON outbox(project_id, created_at);
DROP INDEX webhook_deliveries_by_project;
CREATE INDEX webhook_deliveries_by_project ON webhook_deliveries(project_id, created_at);

-- The retention job (`retention.prune`) replaces nothing: received mail still expires by
-- `sweep.inbound`, at the time its project's retention gave it when it came in.
