-- Issue 34, item 3: when a project's marketing mail may go. `timezone` is the IANA zone of
-- contacts without their own (`data.timezone`); quiet hours (minutes of the day, `start` to
-- `end`, over midnight when `start` > `end`) and quiet days (a bitmask, Monday = 1 ... Sunday =
-- 64) are when marketing mail waits, in each contact's zone. A project without a row has UTC
-- and no quiet time.
CREATE TABLE sending_settings (
    project_id  TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    timezone    TEXT NOT NULL DEFAULT 'UTC',
    quiet_start INTEGER CHECK (quiet_start BETWEEN 0 AND 1439),
    quiet_end   INTEGER CHECK (quiet_end BETWEEN 0 AND 1439),
    quiet_days  INTEGER NOT NULL DEFAULT 0 CHECK (quiet_days BETWEEN 0 AND 127),
    updated_at  INTEGER NOT NULL
);

-- A campaign sent at a wall-clock time in each contact's zone ("2026-12-01T09:00"): each
-- email is due then, where its contact lives.
ALTER TABLE campaigns ADD COLUMN local_time TEXT;
