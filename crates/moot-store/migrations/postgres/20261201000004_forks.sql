-- Counterfactual forks (`moot fork`, `moot bench --fork-of`): a run or benchmark made from
-- another at a round, with an intervention, records where it comes from. The parent is named,
-- not a foreign key: a store may hold a fork without its parent (a partial copy).
ALTER TABLE runs ADD COLUMN fork_parent TEXT;
ALTER TABLE runs ADD COLUMN fork_round BIGINT;
-- The intervention (moot_core::fork::Intervention) as JSON.
ALTER TABLE runs ADD COLUMN fork_json TEXT;
CREATE INDEX runs_fork_parent ON runs (fork_parent, created_at);

ALTER TABLE benches ADD COLUMN fork_parent TEXT;
ALTER TABLE benches ADD COLUMN fork_round BIGINT;
ALTER TABLE benches ADD COLUMN fork_json TEXT;

-- A call a fork copied from its parent instead of asking it (counted at 0 tokens): the parent
-- run's id.
ALTER TABLE calls ADD COLUMN reused_from TEXT;
