-- Issue 33, item 2: what a template's or campaign's body is written in. `body` stays the HTML
-- mail is rendered from (compiled once, when it is saved); `source` is the author's text in
-- `format` (MJML, Markdown or the block editor's JSON), NULL for an `html` body.
ALTER TABLE templates ADD COLUMN format TEXT NOT NULL DEFAULT 'html';
ALTER TABLE templates ADD COLUMN source TEXT;
ALTER TABLE campaigns ADD COLUMN format TEXT NOT NULL DEFAULT 'html';
ALTER TABLE campaigns ADD COLUMN source TEXT;
