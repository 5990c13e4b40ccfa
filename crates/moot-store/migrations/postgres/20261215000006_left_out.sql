-- The items of a benchmark's dataset that `moot bench --skip-invalid` left out because they
-- cannot be scored (moot_store::LeftOut as JSON: how many records, and each item left out with
-- its place and why). NULL when none were.
ALTER TABLE benches ADD COLUMN left_out_json TEXT;
