-- Issue 32: subscription topics. A contact's state per topic is a row of contact_topics when it
-- chose (or was given) one; without a row the topic's default_opt_in holds. Marketing mail of a
-- campaign that targets a topic goes only to contacts subscribed to both the topic and marketing.
CREATE TABLE topics (
    id             TEXT PRIMARY KEY,
    project_id     TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    description    TEXT,
    -- A contact without a choice of its own is subscribed.
    default_opt_in INTEGER NOT NULL DEFAULT 0,
    -- Listed on the preference centre and offered by forms.
    public         INTEGER NOT NULL DEFAULT 1,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);
CREATE UNIQUE INDEX topics_by_name ON topics(project_id, name COLLATE NOCASE);

CREATE TABLE contact_topics (
    topic_id    TEXT NOT NULL REFERENCES topics(id) ON DELETE CASCADE,
    contact_seq INTEGER NOT NULL REFERENCES contacts(seq) ON DELETE CASCADE,
    subscribed  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (topic_id, contact_seq)
) WITHOUT ROWID;
CREATE INDEX contact_topics_by_contact ON contact_topics(contact_seq);

ALTER TABLE campaigns ADD COLUMN topic_id TEXT REFERENCES topics(id) ON DELETE SET NULL;
-- A topic's deletion finds the campaigns that targeted it through this, not a scan.
CREATE INDEX campaigns_by_topic ON campaigns(topic_id) WHERE topic_id IS NOT NULL;

-- The references registry learns a kind: conditions and campaigns name topics, and a topic in
-- use cannot be deleted. SQLite cannot change a CHECK, so the table is made again (its triggers
-- first dropped, then made again on the new table).
DROP TRIGGER refs_of_segment;
DROP TRIGGER refs_of_campaign;
DROP TRIGGER refs_of_workflow;
CREATE TABLE refs_new (
    owner_kind TEXT NOT NULL CHECK (owner_kind IN ('segment', 'campaign', 'workflow')),
    owner_id   TEXT NOT NULL,
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('field', 'event', 'segment', 'template', 'domain', 'topic')),
    name       TEXT NOT NULL,
    PRIMARY KEY (owner_kind, owner_id, kind, name)
) WITHOUT ROWID;
INSERT INTO refs_new (owner_kind, owner_id, project_id, kind, name)
    SELECT owner_kind, owner_id, project_id, kind, name FROM refs;
DROP TABLE refs;
ALTER TABLE refs_new RENAME TO refs;
CREATE INDEX refs_by_name ON refs(project_id, kind, name);
CREATE TRIGGER refs_of_segment AFTER DELETE ON segments BEGIN
    DELETE FROM refs WHERE owner_kind = 'segment' AND owner_id = old.id;
END;
CREATE TRIGGER refs_of_campaign AFTER DELETE ON campaigns BEGIN
    DELETE FROM refs WHERE owner_kind = 'campaign' AND owner_id = old.id;
END;
CREATE TRIGGER refs_of_workflow AFTER DELETE ON workflows BEGIN
    DELETE FROM refs WHERE owner_kind = 'workflow' AND owner_id = old.id;
END;
