-- Rate limits shared by every process working this store (`requests_per_minute`,
-- `tokens_per_minute` of an agent's provider and model): one row per limit, holding its
-- theoretical arrival time (GCRA: when the allowance taken so far is paid back, in
-- microseconds since the epoch on the database's clock). Taking from an allowance is one
-- conditional upsert, so processes taking at once never overdraw it.
CREATE TABLE rate_allowances (
    key     TEXT PRIMARY KEY,
    tat_us  BIGINT NOT NULL
);
