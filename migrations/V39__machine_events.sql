-- Issue 34, item 5: an `email.opened` or `email.clicked` event a machine made (a privacy proxy,
-- a link scanner, a crawler) names why in `machine`, NULL for a person and for every other
-- event. Condition filters on events read only people's unless they ask for machines too, and
-- workflows never start or resume on a machine's. Adding a nullable column rewrites nothing.
ALTER TABLE events ADD COLUMN machine TEXT;

-- A person's click waits `held_until` (core::engagement::BURST_MS) before its `email.clicked`
-- is emitted: a scanner following every link shows itself by a second link in that time, and
-- the held click is then emitted as the scanner's, so it never starts a workflow. NULL once
-- emitted (and for opens and machines' clicks, emitted at once).
ALTER TABLE email_engagements ADD COLUMN held_until INTEGER;
CREATE INDEX email_engagements_held ON email_engagements(project_id, held_until) WHERE held_until IS NOT NULL;

-- A campaign's emails opened, and clicked, by a person at least once (machines' opens and
-- clicks apart): the stats' honest counts, kept as engagements are written so reading them
-- never scans. A click later found to be a scanner's (a burst) takes its email back out when
-- it was the email's only person's click.
ALTER TABLE campaigns ADD COLUMN people_opened_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaigns ADD COLUMN people_clicked_count INTEGER NOT NULL DEFAULT 0;
UPDATE campaigns SET
    people_opened_count = (SELECT count(DISTINCT email_id) FROM email_engagements e
                            WHERE e.campaign_id = campaigns.id AND e.kind = 'open' AND e.machine IS NULL),
    people_clicked_count = (SELECT count(DISTINCT email_id) FROM email_engagements e
                             WHERE e.campaign_id = campaigns.id AND e.kind = 'click' AND e.machine IS NULL);
CREATE TRIGGER campaign_person_engaged AFTER INSERT ON email_engagements
WHEN new.campaign_id IS NOT NULL AND new.machine IS NULL
     AND NOT EXISTS (SELECT 1 FROM email_engagements WHERE email_id = new.email_id AND kind = new.kind
                       AND machine IS NULL AND id <> new.id) BEGIN
    UPDATE campaigns SET
        people_opened_count = people_opened_count + (new.kind = 'open'),
        people_clicked_count = people_clicked_count + (new.kind = 'click')
     WHERE id = new.campaign_id;
END;
CREATE TRIGGER campaign_person_was_a_machine AFTER UPDATE OF machine ON email_engagements
WHEN new.campaign_id IS NOT NULL AND old.machine IS NULL AND new.machine IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM email_engagements WHERE email_id = new.email_id AND kind = new.kind
                       AND machine IS NULL) BEGIN
    UPDATE campaigns SET
        people_opened_count = people_opened_count - (new.kind = 'open'),
        people_clicked_count = people_clicked_count - (new.kind = 'click')
     WHERE id = new.campaign_id;
END;
