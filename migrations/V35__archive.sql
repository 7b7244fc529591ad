-- Issue 32, item 8: the campaign archive and web version. A campaign may be public (listed in
-- the project's archive once it has gone out), with the values its archived copy is rendered
-- with in place of a contact's (`archive_data`, a JSON object). A project may give its public
-- pages an address of its choosing (`/archive/<slug>`), unique across the server; without one
-- the archive answers at the project's id.
ALTER TABLE campaigns ADD COLUMN public INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaigns ADD COLUMN archive_data TEXT;
-- The archive reads a project's public campaigns newest first through this, not a scan.
CREATE INDEX campaigns_archive ON campaigns(project_id, sent_at DESC) WHERE public = 1 AND sent_at IS NOT NULL;

ALTER TABLE branding ADD COLUMN slug TEXT;
CREATE UNIQUE INDEX branding_by_slug ON branding(slug) WHERE slug IS NOT NULL;
