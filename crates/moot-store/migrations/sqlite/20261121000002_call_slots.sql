-- Calls gain a slot (a round's answer, or a MAD-M² judgement / SVR-MAD challenge), a 'skipped'
-- status for calls a protocol recorded without asking the model, the notes the protocol kept
-- about the prompt (masks, orderings, faults) and the call's communication count (NComm).
-- SQLite cannot change a primary key in place, so the table is rebuilt; every row is kept.
CREATE TABLE calls_v2 (
    run_id                 TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    round                  INTEGER NOT NULL,
    agent                  INTEGER NOT NULL,
    slot                   TEXT NOT NULL DEFAULT 'answer',
    agent_id               TEXT NOT NULL,
    backend                TEXT NOT NULL,
    mode                   TEXT NOT NULL,
    template               TEXT NOT NULL,
    template_hash          TEXT NOT NULL,
    messages_json          TEXT NOT NULL,
    peers_json             TEXT NOT NULL,
    -- 'ok': a response (answer may be NULL when unreadable); 'missing': none (see error);
    -- 'skipped': the protocol chose not to ask (see error for why).
    status                 TEXT NOT NULL CHECK (status IN ('ok', 'missing', 'skipped')),
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
    notes_json             TEXT NOT NULL DEFAULT '{}',
    ncomm                  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, round, agent, slot)
);

INSERT INTO calls_v2 (run_id, round, agent, slot, agent_id, backend, mode, template, template_hash,
    messages_json, peers_json, status, response_text, answer, error, finish, input_tokens, output_tokens,
    processed_input_tokens, logprob_tokens, logprob_mean, logprob_min, perplexity, latency_ms, recorded_at,
    notes_json, ncomm)
SELECT run_id, round, agent, 'answer', agent_id, backend, mode, template, template_hash,
    messages_json, peers_json, status, response_text, answer, error, finish, input_tokens, output_tokens,
    processed_input_tokens, logprob_tokens, logprob_mean, logprob_min, perplexity, latency_ms, recorded_at,
    '{}', json_array_length(peers_json)
FROM calls;

DROP TABLE calls;
ALTER TABLE calls_v2 RENAME TO calls;
