-- Cancel requests: `agentry cancel` (any process) sets it on a run another process drives; that
-- process sees it when it renews the run's lease and cancels the run. A claim clears it.
ALTER TABLE runs ADD COLUMN cancel_requested_ms INTEGER;
