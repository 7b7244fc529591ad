-- Issue 29, the poison-message quarantine: how many processes in a row died while working on an
-- item (an email, a job, a workflow execution, a webhook delivery), counted at start from the
-- work journal beside the database (scheduler::inflight). At two the item is failed for good.
CREATE TABLE interrupted_work (
    kind    TEXT NOT NULL,
    item_id TEXT NOT NULL,
    count   INTEGER NOT NULL,
    PRIMARY KEY (kind, item_id)
) WITHOUT ROWID;
