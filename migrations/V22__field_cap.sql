-- Issue 29: a project's field catalogue is capped ([limits] fields_per_project, kept in settings
-- at every start; 1,000 when unset). A write that would add a field beyond it is aborted as a
-- whole, and answered 422: no key can grow the catalogue (and every list made from it) without
-- bound. FieldChanges::save updates known fields first, so only a new field's insert meets this.
CREATE TRIGGER contact_fields_cap BEFORE INSERT ON contact_fields
WHEN (SELECT count(*) FROM contact_fields WHERE project_id = NEW.project_id)
     >= coalesce((SELECT CAST(value AS INTEGER) FROM settings WHERE key = 'fields_per_project'), 1000)
BEGIN
    SELECT RAISE(ABORT, 'FIELD_LIMIT_EXCEEDED');
END;

-- The same for the event names a project tracks ([limits] event_names_per_project, 10,000 when
-- unset): a public key cannot grow /events/names, the field lists and the usage lists without
-- bound. Names the service emits itself (email.*, contact.*, segment.*) are not counted or refused.
CREATE TRIGGER event_names_cap BEFORE INSERT ON event_names
WHEN NEW.name NOT LIKE 'email.%' AND NEW.name NOT LIKE 'contact.%' AND NEW.name NOT LIKE 'segment.%'
     AND NOT EXISTS (SELECT 1 FROM event_names WHERE project_id = NEW.project_id AND name = NEW.name)
     AND (SELECT count(*) FROM event_names WHERE project_id = NEW.project_id
            AND name NOT LIKE 'email.%' AND name NOT LIKE 'contact.%' AND name NOT LIKE 'segment.%')
         >= coalesce((SELECT CAST(value AS INTEGER) FROM settings WHERE key = 'event_names_per_project'), 10000)
BEGIN
    SELECT RAISE(ABORT, 'EVENT_NAME_LIMIT_EXCEEDED');
END;
