-- Append-only histories and leases that expire (SQLite).

-- Each run's messages, once each, at fixed positions from 0: a checkpoint appends what its step
-- added, and the run's record says which positions make up the history (a compacted history
-- skips the folded messages, which stay in the log).
CREATE TABLE run_messages (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    pos    BIGINT NOT NULL,
    -- The message as JSON text.
    body   TEXT NOT NULL,
    PRIMARY KEY (run_id, pos)
) WITHOUT ROWID;

-- When the lease's holder lets it go unless it renews it, in ms since the Unix epoch (the
-- database's clock); 0 when released: the run paused or ended, or was stored before leases
-- expired.
ALTER TABLE runs ADD COLUMN lease_expires_ms BIGINT NOT NULL DEFAULT 0;

-- The number of events the run has: the last event's seq.
ALTER TABLE runs ADD COLUMN events BIGINT NOT NULL DEFAULT 0;
UPDATE runs SET events = (SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_events.run_id = runs.run_id);

-- `snapshot` now holds the run's record: its snapshot without the messages, and their layout in
-- run_messages. Records written before this migration hold their messages inline and still load;
-- their next checkpoint moves them into the log.
