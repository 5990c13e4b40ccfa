-- Failed attempts before a call's outcome (error, class, wait), as a JSON list: retries are
-- part of the transcript.
ALTER TABLE calls ADD COLUMN retries_json TEXT NOT NULL DEFAULT '[]';
