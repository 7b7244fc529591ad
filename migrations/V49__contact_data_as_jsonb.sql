-- Issue 36: a contact's custom fields are stored as SQLite's binary JSON (JSONB) instead of
-- JSON text. A dynamic segment's count reads the filtered fields out of every contact of the
-- project; from text, each read parses the object up to the field, from JSONB it walks a
-- length-prefixed form without parsing. Measured on the bundled SQLite, one thread, 1,000,000
-- rows of ten fields: three filters cost 457-484 ns a row over text and 226-239 ns over JSONB,
-- and the blobs are a fifth smaller. Rows are written through `jsonb(?)` and read through
-- `json(data)` (db::contacts); every JSON function of SQLite takes either form, so a row still
-- in text would read the same. No trigger watches `data`, so the rewrite fires none; it is one
-- pass over the table, about a minute for 10,000,000 contacts.
UPDATE contacts SET data = jsonb(data) WHERE typeof(data) = 'text';
