-- Following a run, and knowing whether it still has a live owner.
--
-- calls.seq: the order a run's calls were written in. Each write takes the run's highest number
-- plus one (the calls of one batch, written in one transaction, may share a number; their place
-- orders them), so a follower asks only for the calls after the last one it sent instead of
-- reading them all again. A call written again (a missing call answered on resume) takes a new
-- number: it is news. Calls written before this migration keep 0.
ALTER TABLE calls ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
CREATE INDEX calls_follow ON calls (run_id, seq, round, agent, slot);

-- runs.heartbeat_ms: when the process running the debate last said it is alive (milliseconds
-- since the epoch on the database's clock, so processes on other machines agree). A run still
-- 'running' that has been silent for long has no live owner: it was interrupted, and `moot
-- resume` continues it. NULL for runs written before this migration.
ALTER TABLE runs ADD COLUMN heartbeat_ms INTEGER;

-- runs.owner: which process last said so (host, boot and process id), so that on the owner's
-- own machine a run whose process is gone counts as interrupted at once, without waiting out
-- the silence.
ALTER TABLE runs ADD COLUMN owner TEXT;

-- bench_workers.owner: the worker's process, named the same way, so that a worker killed on
-- this machine shows as gone at once.
ALTER TABLE bench_workers ADD COLUMN owner TEXT;
