-- Append-only histories and leases that expire (SQLite).
--
-- A run's messages and events are keyed by the run's `position` (its number in the order runs
-- were first saved) rather than its id: the runs under way at one moment were mostly started
-- around the same time, so what their checkpoints append lands on a few neighbouring pages
-- instead of pages all over the file.

-- Each run's messages, once each, at fixed positions from 0: a checkpoint appends what its step
-- added, and the run's record says which positions make up the history (a compacted history
-- skips the folded messages, which stay in the log).
CREATE TABLE run_messages (
    run_no INTEGER NOT NULL REFERENCES runs (position) ON DELETE CASCADE,
    pos    INTEGER NOT NULL,
    -- The message as JSON text.
    body   TEXT NOT NULL,
    PRIMARY KEY (run_no, pos)
) WITHOUT ROWID;

-- Each run's events, numbered from 1 in the order they were saved (moved from the first
-- schema's table, which was keyed by run id).
CREATE TABLE run_events_by_no (
    run_no INTEGER NOT NULL REFERENCES runs (position) ON DELETE CASCADE,
    seq    INTEGER NOT NULL,
    at_ms  BIGINT NOT NULL,
    kind   TEXT NOT NULL,
    -- The event's data as JSON text.
    data   TEXT NOT NULL,
    PRIMARY KEY (run_no, seq)
) WITHOUT ROWID;
INSERT INTO run_events_by_no (run_no, seq, at_ms, kind, data)
    SELECT runs.position, e.seq, e.at_ms, e.kind, e.data
    FROM run_events AS e JOIN runs USING (run_id);
DROP TABLE run_events;
ALTER TABLE run_events_by_no RENAME TO run_events;

-- When the lease's holder lets it go unless it renews it, in ms since the Unix epoch; 0 when
-- released: the run paused or ended, or was stored before leases expired.
ALTER TABLE runs ADD COLUMN lease_expires_ms BIGINT NOT NULL DEFAULT 0;

-- The number of events the run has: the last event's seq.
ALTER TABLE runs ADD COLUMN events BIGINT NOT NULL DEFAULT 0;
UPDATE runs SET events = (SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_events.run_no = runs.position);

-- `snapshot` now holds the run's record: its snapshot without the messages, and their layout in
-- run_messages. Records written before this migration hold their messages inline and still load;
-- their next checkpoint moves them into the log.
