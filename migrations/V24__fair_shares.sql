-- Fair shares (issue 29): each queue's pending rows by project, so that a claim finds the
-- projects with work (one seek each) and reads each one's next due rows in its own order
-- without reading past another project's.
CREATE INDEX emails_queued_by_project ON emails(project_id, priority, next_attempt_at)
    WHERE status = 'QUEUED';
CREATE INDEX webhook_deliveries_pending_by_project ON webhook_deliveries(project_id, next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX workflow_executions_due_by_project ON workflow_executions(project_id, due_at)
    WHERE status IN ('RUNNING', 'WAITING') AND due_at IS NOT NULL;
CREATE INDEX jobs_queued_by_project ON jobs(project_id, run_at) WHERE status = 'queued';
