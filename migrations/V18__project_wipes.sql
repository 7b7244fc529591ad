-- Resetting and deleting a project (issue 15): the rows go in small batches by a durable job
-- (`core::wipe`), so the flag below is the state that survives a restart.

-- 'reset' wipes the project's data and keeps the project; 'delete' then removes the project.
-- While set, the project's keys are refused and no worker takes its mail, executions or
-- webhook deliveries.
ALTER TABLE projects ADD COLUMN wiping TEXT CHECK (wiping IN ('reset', 'delete'));
CREATE INDEX projects_wiping ON projects(id) WHERE wiping IS NOT NULL;

-- The batches find a project's rows by these; without them each batch (and the deletion of the
-- project row, through its foreign keys) would scan the whole table.
CREATE INDEX workflow_executions_by_project ON workflow_executions(project_id);
CREATE INDEX webhook_deliveries_by_project ON webhook_deliveries(project_id);
CREATE INDEX attachment_sets_by_project ON attachment_sets(project_id);
CREATE INDEX domains_by_project ON domains(project_id);

-- Foreign-key lookups: deleting a contact looks for its executions, deleting an email for its
-- captured copies. The only indexes on these columns were partial or led by another column.
CREATE INDEX workflow_executions_of_contact ON workflow_executions(contact_id);
CREATE INDEX outbox_by_email ON outbox(email_id) WHERE email_id IS NOT NULL;
