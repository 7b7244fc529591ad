-- Issue 29: loops between workflows are bounded by rates, counted on these columns.
-- The workflow whose own step (or email) emitted the event that started an execution; NULL for
-- an execution started by anything else (an API call, an import, a tracked event).
ALTER TABLE workflow_executions ADD COLUMN caused_by TEXT;
-- Starts of one workflow for one contact in the last hour ([limits] workflow_runs_per_contact_hour).
DROP INDEX workflow_executions_by_contact;
CREATE INDEX workflow_executions_by_contact ON workflow_executions(workflow_id, contact_id, started_at);
-- Starts for one contact caused by workflows in the last hour ([limits] chained_runs_per_contact_hour).
CREATE INDEX workflow_executions_caused ON workflow_executions(contact_id, started_at)
    WHERE caused_by IS NOT NULL;
