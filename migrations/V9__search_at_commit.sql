-- Contacts added one at a time (track, send, the API) enter the email search index when their
-- transaction commits instead of with their insert: the writer groups many requests in one
-- transaction, each in a savepoint, and FTS5 writes its pending terms to disk at every savepoint
-- and statement journal opened after it was touched, so indexing each insert at once cost a small
-- index segment (and the merges behind it) per request. `db::contacts::insert` lists the new row
-- here; `db::contacts::index_pending` indexes the listed rows and empties the list, last thing
-- before every write transaction commits, so the list is empty whenever it is read from outside.
CREATE TABLE contacts_search_pending (seq INTEGER PRIMARY KEY);

-- A listed row is not in the index yet: deleting it or changing its email has nothing to undo
-- there (its current email is indexed at commit; a deleted one is simply not found).
DROP TRIGGER contacts_search_delete;
CREATE TRIGGER contacts_search_delete AFTER DELETE ON contacts
WHEN NOT EXISTS (SELECT 1 FROM contacts_search_pending WHERE seq = old.seq) BEGIN
    INSERT INTO contacts_email_search (contacts_email_search, rowid, email) VALUES ('delete', old.seq, old.email);
END;
DROP TRIGGER contacts_search_update;
CREATE TRIGGER contacts_search_update AFTER UPDATE OF email ON contacts
WHEN old.email != new.email AND NOT EXISTS (SELECT 1 FROM contacts_search_pending WHERE seq = old.seq) BEGIN
    INSERT INTO contacts_email_search (contacts_email_search, rowid, email) VALUES ('delete', old.seq, old.email);
    INSERT INTO contacts_email_search (rowid, email) VALUES (new.seq, new.email);
END;
