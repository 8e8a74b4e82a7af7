-- The run store's schema (PostgreSQL). Shipped with agentry-store and applied when a store is
-- connected; concurrent connects are safe (the migrator holds an advisory lock).

-- One row per run: its last checkpoint, its lease and the columns listings filter on.
CREATE TABLE runs (
    run_id        TEXT PRIMARY KEY,
    -- The order of first saves, store-wide: listings are newest first.
    position      BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    agent         TEXT NOT NULL,
    session_id    TEXT,
    parent_run_id TEXT,
    -- running, awaiting_approval, cancelled or finished: the snapshot's stop reason.
    status        TEXT NOT NULL,
    -- BIGINT: a step count is an unsigned 32-bit number.
    step          BIGINT NOT NULL,
    -- 0 when first saved; each claim moves it on by one.
    lease         BIGINT NOT NULL DEFAULT 0,
    created_ms    BIGINT NOT NULL,
    updated_ms    BIGINT NOT NULL,
    -- The RunSnapshot. JSON rather than JSONB here and for event data: the text is kept as
    -- saved, so what is loaded is exactly what was saved (JSONB reorders object keys).
    snapshot      JSON NOT NULL
);

CREATE INDEX runs_session_id ON runs (session_id);
CREATE INDEX runs_status ON runs (status);

-- Each run's events, numbered from 1 in the order they were saved.
CREATE TABLE run_events (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    seq    BIGINT NOT NULL,
    at_ms  BIGINT NOT NULL,
    kind   TEXT NOT NULL,
    data   JSON NOT NULL,
    PRIMARY KEY (run_id, seq)
);
