-- Checks of code answers run in the sandbox: one row per run, program and check. The program
-- is the answer's canonical text, so every agent and round that gave it shares the row.
CREATE TABLE validations (
    run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    answer      TEXT NOT NULL,
    check_kind  TEXT NOT NULL,
    verdict     TEXT NOT NULL,
    detail      TEXT NOT NULL,
    elapsed_ms  INTEGER NOT NULL,
    checked_at  TEXT NOT NULL,
    PRIMARY KEY (run_id, answer, check_kind)
);
