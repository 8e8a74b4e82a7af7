-- Checkpoints follow one another (PostgreSQL).
--
-- A run's revision is the number of its checkpoints written: a checkpoint names the revision it
-- follows and is written only at that revision, so one handed over after a checkpoint that failed
-- can never land on top of what is missing. Runs stored before this migration start counting at 0
-- (the processes that load them read the revision from here).
ALTER TABLE runs ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
