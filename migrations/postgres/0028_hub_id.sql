-- The hub's id (issue: a blob store tied to its database). One random id per hub, written by
-- the first hub to start on this database (first writer wins) and into its blob store (the
-- marker `blobs-v1/HUB-ID` of a blob directory, the tag `hub-id` of `PREFIX/hub-id` in an
-- upstream registry). Every start, `ofc-hub gc` and the commands that open blobs compare the
-- two and refuse when they differ (hub_core::hub_id). `blobs_marked_at`: when the id was
-- written to the blob store (Unix ms); NULL until then, so a start interrupted between the two
-- writes finishes the job instead of taking the blob store for another hub's.
CREATE TABLE hub_id (
    one             INTEGER PRIMARY KEY CHECK (one = 1),
    id              TEXT   NOT NULL,
    created_at      BIGINT NOT NULL,
    blobs_marked_at BIGINT
);
