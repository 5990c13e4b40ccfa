-- Prompt caches (issue 44): of a call's input tokens, those the provider wrote to its prompt
-- cache, which Anthropic bills apart (1.25 times the input price). NULL: not reported, as in
-- every row stored before this column. The tokens read from a cache are not a column: they are
-- the input tokens less processed_input_tokens.
ALTER TABLE calls ADD COLUMN cache_write_input_tokens BIGINT;
