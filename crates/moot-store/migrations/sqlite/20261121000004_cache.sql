-- The request cache: a model's completion by the hash of everything that determines it
-- (backend, sampling parameters, mode, messages, sample index). Calls answered from it are
-- marked, so reports can tell cache hits from tokens spent.
CREATE TABLE cache (
    key          TEXT PRIMARY KEY,
    response_json TEXT NOT NULL,
    created_at   TEXT NOT NULL
);

ALTER TABLE calls ADD COLUMN cached INTEGER NOT NULL DEFAULT 0;
