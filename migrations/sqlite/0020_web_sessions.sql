-- Browser sessions of the hub's web pages (issue 18, point 2). The cookie holds a random
-- session id; only its SHA-256 is stored here. A session acts through an API token of its own
-- (named `web session`), so every page applies the API's rules, and revoking that token ends
-- the session too. `csrf` is the token each form of the session must carry back.
CREATE TABLE web_sessions (
    session_hash TEXT   PRIMARY KEY,
    token_id     BIGINT NOT NULL REFERENCES api_tokens(id) ON DELETE CASCADE,
    csrf         TEXT   NOT NULL,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);
CREATE INDEX web_sessions_token ON web_sessions(token_id);
