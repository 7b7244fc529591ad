-- Issue 36: a new contact is counted by `db::contacts::count_inserted`, a statement of its own
-- after the insert, instead of by the trigger `contact_counts_insert`. With a trigger the insert
-- writes two tables, so SQLite gives it a statement journal (it may have to undo its first write
-- when the second fails a foreign key): every page the insert touched was copied into an
-- in-memory journal and freed again, once per contact. A 30,000-row insert into a 100,000-row
-- table took 13.7 us a row with the trigger and 6.9 us with the count as its own statement
-- (Python's sqlite3, so both include its overhead). Deleting a contact or changing its
-- subscription or email is rarer and keeps its trigger; an update of a contact's data alone
-- names neither column (`db::contacts::update_data`), so their triggers stay out of it.
DROP TRIGGER contact_counts_insert;
