-- Issue 32, item 5: the project's suppression list. An entry is an address or a whole domain
-- (and its subdomains). Entries from a hard bounce or a complaint keep MARKETING mail away, as
-- the contact's suppression always did; entries an operator adds (manual) or imports keep all of
-- the project's mail away from the address or domain.
CREATE TABLE suppression_list (
    id         TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('address', 'domain')),
    -- A normalised address, or a lower-cased domain.
    value      TEXT NOT NULL,
    source     TEXT NOT NULL CHECK (source IN ('bounce', 'complaint', 'manual', 'import')),
    reason     TEXT,
    created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX suppression_list_by_value ON suppression_list(project_id, kind, value);
CREATE INDEX suppression_list_by_time ON suppression_list(project_id, created_at, id);

-- The contacts suppressed so far are on the list from the start.
INSERT INTO suppression_list (id, project_id, kind, value, source, reason, created_at)
SELECT lower(hex(randomblob(16))), s.project_id, 'address', c.email,
       CASE s.reason WHEN 'complaint' THEN 'complaint' ELSE 'bounce' END, s.detail, s.created_at
FROM suppressions s JOIN contacts c ON c.id = s.contact_id
WHERE true
ON CONFLICT DO NOTHING;
