-- The failure limiter's attempts in flight, one row each with when it was reserved (issue:
-- a killed replica's attempts). An attempt is reserved before its password check and its row
-- deleted when it settles; a replica killed in between leaves the row, which stops counting
-- once older than a bound longer than any check (hub_core::limits::IN_FLIGHT_BOUND) and is
-- deleted as the limiter sweeps. `auth_failures.in_flight` is no longer read (kept: a replica
-- of the release before still counts there during a rolling upgrade).
CREATE TABLE auth_in_flight (
    id          INTEGER PRIMARY KEY,
    key         TEXT   NOT NULL,
    reserved_at BIGINT NOT NULL
);
CREATE INDEX auth_in_flight_key ON auth_in_flight (key, reserved_at);
CREATE INDEX auth_in_flight_reserved ON auth_in_flight (reserved_at);
