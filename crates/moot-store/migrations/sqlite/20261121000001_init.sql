-- Runs: one debate each (a benchmark will group many).
CREATE TABLE runs (
    id           TEXT PRIMARY KEY,
    created_at   TEXT NOT NULL,
    question     TEXT NOT NULL,
    protocol     TEXT NOT NULL,
    rule         TEXT NOT NULL,
    -- The DebateSpec (question, answer kind, options, agents, rounds, seed) as JSON.
    spec_json    TEXT NOT NULL,
    -- The resolved configuration (backends, deadlines), enough to resume the run.
    config_json  TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
    answer       TEXT,
    finished_at  TEXT
);

-- Every call, written before its outcome enters the in-memory transcript.
CREATE TABLE calls (
    run_id                 TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    round                  INTEGER NOT NULL,
    agent                  INTEGER NOT NULL,
    agent_id               TEXT NOT NULL,
    backend                TEXT NOT NULL,
    mode                   TEXT NOT NULL,
    template               TEXT NOT NULL,
    template_hash          TEXT NOT NULL,
    messages_json          TEXT NOT NULL,
    peers_json             TEXT NOT NULL,
    -- 'ok': a response (answer may be NULL when unreadable); 'missing': none (see error).
    status                 TEXT NOT NULL CHECK (status IN ('ok', 'missing')),
    response_text          TEXT,
    answer                 TEXT,
    error                  TEXT,
    finish                 TEXT,
    input_tokens           INTEGER NOT NULL DEFAULT 0,
    output_tokens          INTEGER NOT NULL DEFAULT 0,
    processed_input_tokens INTEGER,
    logprob_tokens         INTEGER,
    logprob_mean           REAL,
    logprob_min            REAL,
    perplexity             REAL,
    latency_ms             INTEGER NOT NULL,
    recorded_at            TEXT NOT NULL,
    PRIMARY KEY (run_id, round, agent)
);

CREATE TABLE decisions (
    run_id            TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    rule              TEXT NOT NULL,
    answer            TEXT,
    decision_json     TEXT NOT NULL,
    decided_at        TEXT NOT NULL,
    PRIMARY KEY (run_id, rule)
);

CREATE INDEX runs_created ON runs (created_at);
