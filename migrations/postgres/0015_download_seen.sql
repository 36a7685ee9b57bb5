-- A download counts once per client, version and UTC day (issue 13, point 11): the client is
-- a hash of the user id or of the address (an IPv6 /64), never the address itself. Rows of
-- days before yesterday are deleted as downloads come in.
CREATE TABLE download_seen (
    day        BIGINT NOT NULL,
    version_id BIGINT NOT NULL,
    client     TEXT   NOT NULL,
    PRIMARY KEY (day, version_id, client)
);
