-- The run store's schema (SQLite). Shipped with agentry-store and applied when a store is opened.

-- One row per run: its last checkpoint, its lease and the columns listings filter on.
CREATE TABLE runs (
    run_id        TEXT PRIMARY KEY NOT NULL,
    -- The order of first saves, store-wide (max + 1 when the run is inserted): listings are
    -- newest first. An explicit column, unlike the rowid, keeps its values through VACUUM.
    position      INTEGER NOT NULL UNIQUE,
    agent         TEXT NOT NULL,
    session_id    TEXT,
    parent_run_id TEXT,
    -- running, awaiting_approval, cancelled or finished: the snapshot's stop reason.
    status        TEXT NOT NULL,
    step          INTEGER NOT NULL,
    -- 0 when first saved; each claim moves it on by one.
    lease         BIGINT NOT NULL DEFAULT 0,
    created_ms    BIGINT NOT NULL,
    updated_ms    BIGINT NOT NULL,
    -- The RunSnapshot as JSON text.
    snapshot      TEXT NOT NULL
);

CREATE INDEX runs_session_id ON runs (session_id);
CREATE INDEX runs_status ON runs (status);

-- Each run's events, numbered from 1 in the order they were saved.
CREATE TABLE run_events (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    seq    BIGINT NOT NULL,
    at_ms  BIGINT NOT NULL,
    kind   TEXT NOT NULL,
    -- The event's data as JSON text.
    data   TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
