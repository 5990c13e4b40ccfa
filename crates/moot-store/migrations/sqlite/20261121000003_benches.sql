-- Benchmarks: a named set of debates (dataset items × protocols). Each item's debate is an
-- ordinary run; bench_items links them, written before the debate starts so an interrupted
-- benchmark resumes the same run instead of starting another.
CREATE TABLE benches (
    name         TEXT PRIMARY KEY,
    created_at   TEXT NOT NULL,
    dataset      TEXT NOT NULL,
    -- The protocols compared, in order, as a JSON array of names.
    protocols_json TEXT NOT NULL,
    -- The subsample: how many items (NULL = all) and the seed that chose them.
    item_limit   INTEGER,
    seed         INTEGER NOT NULL,
    -- The resolved configuration (agents, deadlines, options), to resume with.
    config_json  TEXT NOT NULL
);

CREATE TABLE bench_items (
    bench        TEXT NOT NULL REFERENCES benches(name) ON DELETE CASCADE,
    protocol     TEXT NOT NULL,
    item_id      TEXT NOT NULL,
    -- The item's place in the benchmark's item order.
    position     INTEGER NOT NULL,
    gold         TEXT NOT NULL,
    run_id       TEXT NOT NULL REFERENCES runs(id),
    PRIMARY KEY (bench, protocol, item_id)
);

CREATE INDEX bench_items_order ON bench_items (bench, protocol, position);
