-- The email search index (FTS5) writes a small segment at every commit of the writer and merges
-- them behind it. By default it starts merging a level once 4 segments wait there, a little
-- after every 64 pages written, which put a merge step into many commits: `/v1/track`'s p99 was
-- 11.3-11.8 ms at full rate and 15.8-16.8 ms at half rate. Merging 16 at a time does less work
-- in all (fewer levels) and stalls commits less often: 7.3-8.0 and 11.5-12.8 ms, throughput
-- unchanged; a search over 570,000 contacts still takes under a millisecond. The crisis merge,
-- which merges a whole level at once inside one commit, waits for 64 segments instead of 16,
-- so the merges stay incremental: at 16 every merge became a crisis one, and a level of a few
-- million contacts would hold the writer for seconds.
INSERT INTO contacts_email_search (contacts_email_search, rank) VALUES ('automerge', 16);
INSERT INTO contacts_email_search (contacts_email_search, rank) VALUES ('crisismerge', 64);
