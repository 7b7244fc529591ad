-- A job's input (the uploaded CSV, or the JSON list of ids) gets a table of its own. In the
-- middle of the job's row it made every progress update rewrite the whole file (a 5 MiB upload
-- was written again after each batch of an import), and every read of the counters behind it
-- (the worker's, and each `GET /contacts/import/:id` poll) walk its overflow pages.
CREATE TABLE contact_job_inputs (
    job_id TEXT PRIMARY KEY REFERENCES contact_jobs(id) ON DELETE CASCADE,
    input  BLOB NOT NULL
);

INSERT INTO contact_job_inputs (job_id, input) SELECT id, input FROM contact_jobs WHERE input IS NOT NULL;
ALTER TABLE contact_jobs DROP COLUMN input;
