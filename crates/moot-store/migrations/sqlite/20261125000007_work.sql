-- Benchmarks worked by many processes (`moot bench --detach`, `moot work`). A job is one item's
-- debate under one protocol, with everything a worker needs to run it (the item itself, so a
-- worker on another machine needs no dataset files). A worker claims a job with a lease; a job
-- whose lease ran out (its worker died) is claimed again, and the new worker continues the
-- debate from its recorded calls. Times are milliseconds since the epoch on the database's clock,
-- so workers on machines whose clocks differ agree on when a lease ends.
CREATE TABLE bench_jobs (
    bench           TEXT NOT NULL REFERENCES benches(name) ON DELETE CASCADE,
    protocol        TEXT NOT NULL,
    item_id         TEXT NOT NULL,
    -- The item's place in the benchmark's item order, and the job's place in the plan (items
    -- in order, every protocol of an item before the next item).
    position        INTEGER NOT NULL,
    seq             INTEGER NOT NULL,
    item_json       TEXT NOT NULL,
    state           TEXT NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'running', 'done', 'failed')),
    worker          TEXT,
    -- The worker that held the job before the last claim (a takeover names the dead worker).
    previous_worker TEXT,
    lease_until     INTEGER,
    attempts        INTEGER NOT NULL DEFAULT 0,
    error           TEXT,
    claimed_at      INTEGER,
    finished_at     INTEGER,
    PRIMARY KEY (bench, protocol, item_id)
);

CREATE INDEX bench_jobs_claim ON bench_jobs (bench, state, seq);

-- Who works a benchmark, and how fast: totals each worker writes as it goes.
CREATE TABLE bench_workers (
    bench         TEXT NOT NULL REFERENCES benches(name) ON DELETE CASCADE,
    worker        TEXT NOT NULL,
    started_at    INTEGER NOT NULL,
    last_seen     INTEGER NOT NULL,
    debates       INTEGER NOT NULL DEFAULT 0,
    calls         INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    -- 'working' until it exits cleanly ('exited'); a worker killed stays 'working' and stops
    -- being seen.
    state         TEXT NOT NULL DEFAULT 'working' CHECK (state IN ('working', 'exited')),
    PRIMARY KEY (bench, worker)
);

-- The request key of a call (see moot_engine::request_key): what was asked, so a call recorded
-- twice (a worker that lost its lease and the one that took over) is seen as the same request.
ALTER TABLE calls ADD COLUMN request_key TEXT;
