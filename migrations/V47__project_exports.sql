-- Issue 35, item 6: a project's data as a zip of CSV and JSON files, made by a durable job
-- (`project.export`) into <data_dir>/exports/<project>/<id>.zip.
CREATE TABLE project_exports (
    id          TEXT PRIMARY KEY,
    project_id  TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    status      TEXT NOT NULL CHECK (status IN ('queued', 'done', 'failed')),
    bytes       INTEGER,
    error       TEXT,
    created_at  INTEGER NOT NULL,
    finished_at INTEGER
);
CREATE INDEX project_exports_by_project ON project_exports(project_id, created_at);
