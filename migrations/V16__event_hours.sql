-- Analytics (issue 14): events per project, name and hour, kept by triggers as events are
-- written and deleted, so time series, top events and recent counts read a few hundred rows
-- however many events a project has.

CREATE TABLE event_hours (
    project_id TEXT NOT NULL,
    name       TEXT NOT NULL,
    hour       INTEGER NOT NULL,            -- ms at the start of the UTC hour
    events     INTEGER NOT NULL,
    PRIMARY KEY (project_id, hour, name)
) WITHOUT ROWID;

INSERT INTO event_hours (project_id, name, hour, events)
    SELECT project_id, name, (created_at / 3600000) * 3600000, count(*) FROM events GROUP BY 1, 2, 3;

CREATE TRIGGER event_hours_insert AFTER INSERT ON events BEGIN
    INSERT INTO event_hours (project_id, name, hour, events)
    VALUES (new.project_id, new.name, (new.created_at / 3600000) * 3600000, 1)
    ON CONFLICT (project_id, hour, name) DO UPDATE SET events = events + 1;
END;
CREATE TRIGGER event_hours_delete AFTER DELETE ON events BEGIN
    UPDATE event_hours SET events = events - 1
     WHERE project_id = old.project_id AND hour = (old.created_at / 3600000) * 3600000 AND name = old.name;
END;
CREATE TRIGGER event_hours_project_gone AFTER DELETE ON projects BEGIN
    DELETE FROM event_hours WHERE project_id = old.id;
END;
