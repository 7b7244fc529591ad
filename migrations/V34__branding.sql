-- Issue 32, item 7: how a project's public pages look and speak. The name they show (the
-- project's when NULL), a logo (an upload of the project), an accent colour (#rrggbb), the
-- default language of a reader no one knows better, and the project's own wording of any
-- shipped text, as JSON `{"de": {"manage.title": "..."}}`. Kept on a reset, like the
-- project's other settings.
CREATE TABLE branding (
    project_id TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    name       TEXT,
    logo       TEXT REFERENCES uploads(token) ON DELETE SET NULL,
    color      TEXT,
    language   TEXT,
    texts      TEXT NOT NULL DEFAULT '{}',
    updated_at INTEGER NOT NULL
);
-- An upload's deletion finds the branding that shows it through this, not a scan.
CREATE INDEX branding_by_logo ON branding(logo) WHERE logo IS NOT NULL;
