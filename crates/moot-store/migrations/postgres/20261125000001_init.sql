-- moot's store on PostgreSQL: the same tables as the SQLite store (migrations/sqlite, all of them
-- up to 20261125000007), so both hold the same records and read back the same way. Integers are
-- BIGINT and JSON is kept as TEXT, exactly as SQLite keeps it, so one row decoder serves both.

-- Runs: one debate each.
CREATE TABLE runs (
    id           TEXT PRIMARY KEY,
    created_at   TEXT NOT NULL,
    question     TEXT NOT NULL,
    protocol     TEXT NOT NULL,
    rule         TEXT NOT NULL,
    spec_json    TEXT NOT NULL,
    config_json  TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
    answer       TEXT,
    finished_at  TEXT
);

CREATE INDEX runs_created ON runs (created_at);

-- Every call, written before its outcome enters the in-memory transcript.
CREATE TABLE calls (
    run_id                 TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    round                  BIGINT NOT NULL,
    agent                  BIGINT NOT NULL,
    slot                   TEXT NOT NULL DEFAULT 'answer',
    agent_id               TEXT NOT NULL,
    backend                TEXT NOT NULL,
    mode                   TEXT NOT NULL,
    template               TEXT NOT NULL,
    template_hash          TEXT NOT NULL,
    messages_json          TEXT NOT NULL,
    peers_json             TEXT NOT NULL,
    status                 TEXT NOT NULL CHECK (status IN ('ok', 'missing', 'skipped')),
    response_text          TEXT,
    answer                 TEXT,
    error                  TEXT,
    finish                 TEXT,
    input_tokens           BIGINT NOT NULL DEFAULT 0,
    output_tokens          BIGINT NOT NULL DEFAULT 0,
    processed_input_tokens BIGINT,
    logprob_tokens         BIGINT,
    logprob_mean           DOUBLE PRECISION,
    logprob_min            DOUBLE PRECISION,
    perplexity             DOUBLE PRECISION,
    latency_ms             BIGINT NOT NULL,
    recorded_at            TEXT NOT NULL,
    notes_json             TEXT NOT NULL DEFAULT '{}',
    ncomm                  BIGINT NOT NULL DEFAULT 0,
    cached                 BIGINT NOT NULL DEFAULT 0,
    retries_json           TEXT NOT NULL DEFAULT '[]',
    request_key            TEXT,
    PRIMARY KEY (run_id, round, agent, slot)
);

CREATE TABLE decisions (
    run_id            TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    rule              TEXT NOT NULL,
    answer            TEXT,
    decision_json     TEXT NOT NULL,
    decided_at        TEXT NOT NULL,
    PRIMARY KEY (run_id, rule)
);

CREATE TABLE benches (
    name           TEXT PRIMARY KEY,
    created_at     TEXT NOT NULL,
    dataset        TEXT NOT NULL,
    protocols_json TEXT NOT NULL,
    item_limit     BIGINT,
    seed           BIGINT NOT NULL,
    config_json    TEXT NOT NULL
);

CREATE TABLE bench_items (
    bench        TEXT NOT NULL REFERENCES benches(name) ON DELETE CASCADE,
    protocol     TEXT NOT NULL,
    item_id      TEXT NOT NULL,
    position     BIGINT NOT NULL,
    gold         TEXT NOT NULL,
    run_id       TEXT NOT NULL REFERENCES runs(id),
    PRIMARY KEY (bench, protocol, item_id)
);

CREATE INDEX bench_items_order ON bench_items (bench, protocol, position);

-- The request cache. `stored` orders entries by insertion for trimming (SQLite uses its rowid).
CREATE TABLE cache (
    key           TEXT PRIMARY KEY,
    response_json TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    stored        BIGSERIAL NOT NULL
);

CREATE TABLE validations (
    run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    answer      TEXT NOT NULL,
    check_kind  TEXT NOT NULL,
    verdict     TEXT NOT NULL,
    detail      TEXT NOT NULL,
    elapsed_ms  BIGINT NOT NULL,
    checked_at  TEXT NOT NULL,
    PRIMARY KEY (run_id, answer, check_kind)
);

-- Benchmarks worked by many processes; see migrations/sqlite/20261125000007_work.sql.
CREATE TABLE bench_jobs (
    bench           TEXT NOT NULL REFERENCES benches(name) ON DELETE CASCADE,
    protocol        TEXT NOT NULL,
    item_id         TEXT NOT NULL,
    position        BIGINT NOT NULL,
    seq             BIGINT NOT NULL,
    item_json       TEXT NOT NULL,
    state           TEXT NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'running', 'done', 'failed')),
    worker          TEXT,
    previous_worker TEXT,
    lease_until     BIGINT,
    attempts        BIGINT NOT NULL DEFAULT 0,
    error           TEXT,
    claimed_at      BIGINT,
    finished_at     BIGINT,
    PRIMARY KEY (bench, protocol, item_id)
);

CREATE INDEX bench_jobs_claim ON bench_jobs (bench, state, seq);

CREATE TABLE bench_workers (
    bench         TEXT NOT NULL REFERENCES benches(name) ON DELETE CASCADE,
    worker        TEXT NOT NULL,
    started_at    BIGINT NOT NULL,
    last_seen     BIGINT NOT NULL,
    debates       BIGINT NOT NULL DEFAULT 0,
    calls         BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    state         TEXT NOT NULL DEFAULT 'working' CHECK (state IN ('working', 'exited')),
    PRIMARY KEY (bench, worker)
);
