-- Issue 33, item 5: how many executions completed (or failed) each workflow step, for the
-- canvas. Counting them from `workflow_execution_steps` would read every run of a workflow on
-- every look; the counts are kept as the runs are written instead. A run is rewritten as it
-- moves on (INSERT OR REPLACE on its primary key), so a run is counted when it first takes
-- COMPLETED or FAILED: the trigger fires before the write, while the run's previous state can
-- still be read, and a run written twice in that state (a step retried after a restart) counts
-- once. A step's counts go with it.
CREATE TABLE workflow_step_counts (
    step_id   TEXT PRIMARY KEY REFERENCES workflow_steps(id) ON DELETE CASCADE,
    completed INTEGER NOT NULL DEFAULT 0,
    failed    INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

INSERT INTO workflow_step_counts (step_id, completed, failed)
SELECT r.step_id, sum(r.status = 'COMPLETED'), sum(r.status = 'FAILED')
FROM workflow_execution_steps r JOIN workflow_steps s ON s.id = r.step_id
WHERE r.status IN ('COMPLETED', 'FAILED')
GROUP BY r.step_id;

CREATE TRIGGER workflow_step_counted BEFORE INSERT ON workflow_execution_steps
WHEN new.status IN ('COMPLETED', 'FAILED')
  AND NOT EXISTS (SELECT 1 FROM workflow_execution_steps
                  WHERE execution_id = new.execution_id AND seq = new.seq AND status = new.status)
  AND EXISTS (SELECT 1 FROM workflow_steps WHERE id = new.step_id)
BEGIN
    INSERT INTO workflow_step_counts (step_id, completed, failed)
    VALUES (new.step_id, new.status = 'COMPLETED', new.status = 'FAILED')
    ON CONFLICT (step_id) DO UPDATE SET completed = completed + excluded.completed,
                                        failed = failed + excluded.failed;
END;
