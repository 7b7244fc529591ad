-- Issue 32, item 6: an import's choices, as JSON: what happens to subscriptions (subscribe,
-- unsubscribe, from_column, keep), the topics its contacts join, and each column's mapping
-- (skip, rename, type). NULL: api.md's import, as before.
ALTER TABLE contact_jobs ADD COLUMN options TEXT;
