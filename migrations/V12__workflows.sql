-- Workflows (appliance.md §11): a graph of steps joined by transitions, and per-contact
-- executions that walk it. Every wait is a row with a due time, so waiting executions cost disk.

CREATE TABLE workflows (
    id             TEXT PRIMARY KEY,
    project_id     TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    description    TEXT,
    trigger_type   TEXT NOT NULL CHECK (trigger_type IN ('EVENT', 'MANUAL')),
    -- The event that starts executions (EVENT), kept beside the trigger step's config so that
    -- matching an event is one indexed lookup.
    trigger_event  TEXT,
    enabled        INTEGER NOT NULL DEFAULT 0,
    allow_reentry  INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);
CREATE INDEX workflows_by_project ON workflows(project_id, created_at);
CREATE INDEX workflows_by_trigger ON workflows(project_id, trigger_event)
    WHERE enabled = 1 AND trigger_type = 'EVENT';

CREATE TABLE workflow_steps (
    id          TEXT PRIMARY KEY,
    workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    type        TEXT NOT NULL CHECK (type IN ('TRIGGER', 'SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT',
                                              'CONDITION', 'WEBHOOK', 'UPDATE_CONTACT', 'EXIT')),
    name        TEXT,
    config      TEXT NOT NULL,              -- JSON, checked per type
    position    TEXT,                       -- JSON {x, y} for the editor's drawing
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX workflow_steps_by_workflow ON workflow_steps(workflow_id, created_at);
-- One trigger step per workflow.
CREATE UNIQUE INDEX workflow_steps_one_trigger ON workflow_steps(workflow_id) WHERE type = 'TRIGGER';

CREATE TABLE workflow_transitions (
    id           TEXT PRIMARY KEY,
    workflow_id  TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    from_step_id TEXT NOT NULL REFERENCES workflow_steps(id) ON DELETE CASCADE,
    to_step_id   TEXT NOT NULL REFERENCES workflow_steps(id) ON DELETE CASCADE,
    branch       TEXT CHECK (branch IN ('yes', 'no', 'event', 'timeout')),
    created_at   INTEGER NOT NULL
);
CREATE INDEX workflow_transitions_by_workflow ON workflow_transitions(workflow_id, created_at);
CREATE INDEX workflow_transitions_to ON workflow_transitions(to_step_id);
-- A step leads to one next step per branch, so an execution's path is never ambiguous.
CREATE UNIQUE INDEX workflow_transitions_one_per_branch
    ON workflow_transitions(from_step_id, ifnull(branch, ''));

CREATE TABLE workflow_executions (
    id              TEXT PRIMARY KEY,
    workflow_id     TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    project_id      TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    contact_id      TEXT NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    status          TEXT NOT NULL CHECK (status IN ('RUNNING', 'WAITING', 'COMPLETED', 'EXITED',
                                                    'FAILED', 'CANCELLED')),
    current_step_id TEXT,
    context         TEXT NOT NULL DEFAULT '{}',
    exit_reason     TEXT,
    -- When the runner takes it next: now for RUNNING, the end of a DELAY or of a
    -- WAIT_FOR_EVENT's timeout for WAITING; NULL while waiting for an event without a timeout.
    due_at          INTEGER,
    -- The event a WAIT_FOR_EVENT step waits for.
    wait_event      TEXT,
    locked_until    INTEGER,
    started_at      INTEGER NOT NULL,
    completed_at    INTEGER,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX workflow_executions_due ON workflow_executions(due_at)
    WHERE status IN ('RUNNING', 'WAITING') AND due_at IS NOT NULL;
CREATE INDEX workflow_executions_waiting ON workflow_executions(contact_id, wait_event)
    WHERE status = 'WAITING' AND wait_event IS NOT NULL;
CREATE INDEX workflow_executions_by_workflow ON workflow_executions(workflow_id, status, started_at);
CREATE INDEX workflow_executions_by_contact ON workflow_executions(workflow_id, contact_id);

-- Each step an execution ran, in order, with its output or error.
CREATE TABLE workflow_execution_steps (
    execution_id TEXT NOT NULL REFERENCES workflow_executions(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    step_id      TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('RUNNING', 'WAITING', 'COMPLETED', 'FAILED', 'SKIPPED')),
    output       TEXT,
    error        TEXT,
    started_at   INTEGER NOT NULL,
    completed_at INTEGER,
    PRIMARY KEY (execution_id, seq)
) WITHOUT ROWID;

CREATE TRIGGER refs_of_workflow AFTER DELETE ON workflows BEGIN
    DELETE FROM refs WHERE owner_kind = 'workflow' AND owner_id = old.id;
END;
