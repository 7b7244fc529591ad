-- Issue 34, item 1: A/B tests. A campaign may test 2 to 5 variants of its content on a share of
-- its audience, wait, and send the winner to the rest.
--
-- The test's settings and state live on the campaign (NULL `ab_share`: no test), so every read
-- of a campaign knows whether it has one. `ab_phase` is READY until the campaign is sent, then
-- TESTING while the test share is queued and sent and the wait runs (`ab_decide_at` is set once
-- the whole share is queued), then DECIDED once `ab_winner` is picked, by the metric at
-- `ab_decide_at` or by hand, and the rest of the audience is queued with the winner.
ALTER TABLE campaigns ADD COLUMN ab_share INTEGER;          -- percent of the audience in the test
ALTER TABLE campaigns ADD COLUMN ab_metric TEXT;            -- opens, humanOpens, clicks, humanClicks
ALTER TABLE campaigns ADD COLUMN ab_wait_hours INTEGER;
ALTER TABLE campaigns ADD COLUMN ab_pick TEXT;              -- auto (by the metric) or manual
ALTER TABLE campaigns ADD COLUMN ab_phase TEXT;
ALTER TABLE campaigns ADD COLUMN ab_decide_at INTEGER;
ALTER TABLE campaigns ADD COLUMN ab_winner INTEGER;
ALTER TABLE campaigns ADD COLUMN ab_decided_by TEXT;        -- metric or hand
ALTER TABLE campaigns ADD COLUMN ab_decided_at INTEGER;

-- A variant: what it changes of the campaign's content (NULL: the campaign's), and what
-- happened to the test share's emails that carried it, kept by the triggers below in the
-- transaction that changes the email, like the campaign's own counters (V7, V39).
CREATE TABLE ab_variants (
    campaign_id          TEXT NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
    position             INTEGER NOT NULL CHECK (position BETWEEN 0 AND 4),
    subject              TEXT,
    from_name            TEXT,
    body                 TEXT,    -- compiled HTML with its Liquid, as campaigns.body
    format               TEXT,
    source               TEXT,    -- what the author wrote, when compiled
    template_id          TEXT,
    recipients           INTEGER NOT NULL DEFAULT 0,
    sent_count           INTEGER NOT NULL DEFAULT 0,
    delivered_count      INTEGER NOT NULL DEFAULT 0,
    bounced_count        INTEGER NOT NULL DEFAULT 0,
    opened_count         INTEGER NOT NULL DEFAULT 0,
    clicked_count        INTEGER NOT NULL DEFAULT 0,
    people_opened_count  INTEGER NOT NULL DEFAULT 0,
    people_clicked_count INTEGER NOT NULL DEFAULT 0,
    unsubscribed_count   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (campaign_id, position)
) WITHOUT ROWID;

-- The variant a test-share email carries; NULL for the rest of the audience, which gets the
-- winner (and for all other mail).
ALTER TABLE emails ADD COLUMN variant INTEGER;

CREATE TRIGGER ab_queued AFTER INSERT ON emails
WHEN new.variant IS NOT NULL BEGIN
    UPDATE ab_variants SET recipients = recipients + 1
     WHERE campaign_id = new.campaign_id AND position = new.variant;
END;
CREATE TRIGGER ab_sent AFTER UPDATE OF sent_at ON emails
WHEN new.variant IS NOT NULL AND old.sent_at IS NULL AND new.sent_at IS NOT NULL BEGIN
    UPDATE ab_variants SET sent_count = sent_count + 1
     WHERE campaign_id = new.campaign_id AND position = new.variant;
END;
CREATE TRIGGER ab_outcome AFTER UPDATE OF status ON emails
WHEN new.variant IS NOT NULL AND new.status IN ('DELIVERED', 'BOUNCED') AND old.status <> new.status BEGIN
    UPDATE ab_variants SET
        delivered_count = delivered_count + (new.status = 'DELIVERED'),
        bounced_count = bounced_count + (new.status = 'BOUNCED')
     WHERE campaign_id = new.campaign_id AND position = new.variant;
END;
CREATE TRIGGER ab_opened AFTER UPDATE OF opened_at ON emails
WHEN new.variant IS NOT NULL AND old.opened_at IS NULL AND new.opened_at IS NOT NULL BEGIN
    UPDATE ab_variants SET opened_count = opened_count + 1
     WHERE campaign_id = new.campaign_id AND position = new.variant;
END;
CREATE TRIGGER ab_clicked AFTER UPDATE OF clicked_at ON emails
WHEN new.variant IS NOT NULL AND old.clicked_at IS NULL AND new.clicked_at IS NOT NULL BEGIN
    UPDATE ab_variants SET clicked_count = clicked_count + 1
     WHERE campaign_id = new.campaign_id AND position = new.variant;
END;
CREATE TRIGGER ab_unsubscribed AFTER UPDATE OF unsubscribed_at ON emails
WHEN new.variant IS NOT NULL AND old.unsubscribed_at IS NULL AND new.unsubscribed_at IS NOT NULL BEGIN
    UPDATE ab_variants SET unsubscribed_count = unsubscribed_count + 1
     WHERE campaign_id = new.campaign_id AND position = new.variant;
END;
-- People's opens and clicks, as campaign_person_engaged and campaign_person_was_a_machine (V39)
-- count them for the campaign.
CREATE TRIGGER ab_person_engaged AFTER INSERT ON email_engagements
WHEN new.campaign_id IS NOT NULL AND new.machine IS NULL
     AND (SELECT variant FROM emails WHERE id = new.email_id) IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM email_engagements WHERE email_id = new.email_id AND kind = new.kind
                       AND machine IS NULL AND id <> new.id) BEGIN
    UPDATE ab_variants SET
        people_opened_count = people_opened_count + (new.kind = 'open'),
        people_clicked_count = people_clicked_count + (new.kind = 'click')
     WHERE campaign_id = new.campaign_id
       AND position = (SELECT variant FROM emails WHERE id = new.email_id);
END;
CREATE TRIGGER ab_person_was_a_machine AFTER UPDATE OF machine ON email_engagements
WHEN new.campaign_id IS NOT NULL AND old.machine IS NULL AND new.machine IS NOT NULL
     AND (SELECT variant FROM emails WHERE id = new.email_id) IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM email_engagements WHERE email_id = new.email_id AND kind = new.kind
                       AND machine IS NULL) BEGIN
    UPDATE ab_variants SET
        people_opened_count = people_opened_count - (new.kind = 'open'),
        people_clicked_count = people_clicked_count - (new.kind = 'click')
     WHERE campaign_id = new.campaign_id
       AND position = (SELECT variant FROM emails WHERE id = new.email_id);
END;
