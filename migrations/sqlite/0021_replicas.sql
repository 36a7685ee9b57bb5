-- Several `ofc-hub serve` replicas on one database (issue 30): what was per process is here.
--
-- The transparency log's public key and origin, recorded by the first hub to start on this
-- database (first writer wins). A replica whose log key differs refuses to start: two keys
-- would sign two views of one log. The private key is not stored here (ARCHITECTURE.md says
-- why): every replica reads it from its data dir or from `log_key_file`.
CREATE TABLE log_key (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    origin     TEXT   NOT NULL,
    verifier   TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);
-- The checkpoints the witnesses cosigned, as the one replica that submits heads (the holder
-- of the cosigner lock) last kept them, so every replica serves them. `kind`: `latest` (any
-- witness cosigned it) or `full` (every witness did).
CREATE TABLE log_cosigned (
    kind  TEXT   PRIMARY KEY,
    size  BIGINT NOT NULL,
    root  BLOB   NOT NULL,
    note  TEXT   NOT NULL,
    count BIGINT NOT NULL,
    at    BIGINT NOT NULL
);
-- The failure limiter's windows, shared by every replica (`hub_core::limits`): failures and
-- attempts in flight per key (`login:<ip>`, `login:<user>@<ip>`, `token:<ip>`) in the
-- fixed window that started at `window_start` (Unix ms). Rows of ended windows are deleted as
-- the limiter goes.
CREATE TABLE auth_failures (
    key          TEXT   PRIMARY KEY,
    window_start BIGINT NOT NULL,
    failures     BIGINT NOT NULL,
    in_flight    BIGINT NOT NULL
);
CREATE INDEX auth_failures_window ON auth_failures (window_start);
