-- The transparency log (issue 19): every publish, key registration/revocation and yank is
-- appended, in the transaction of the change, as an entry (`index_schema::tlog::Entry`, one
-- text line). Hashes are stored in the layout of Go's sumdb/tlog (`stored_hash_index`: every
-- complete subtree's hash, about two per entry), so tiles and proofs read O(log n) rows and
-- never the leaves. `tlog_state` is the one-row head (size, root and right edge, from which an
-- append computes its new hashes without reading any): appends take its row first (the writer
-- lock on PostgreSQL), so indexes are commit order without gaps.
CREATE TABLE tlog_state (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    size BIGINT NOT NULL,
    root BLOB   NOT NULL,
    -- The right edge: the roots of the tree's perfect subtrees, largest first, 32 bytes each.
    edge BLOB   NOT NULL DEFAULT x''
);
INSERT INTO tlog_state (id, size, root)
VALUES (1, 0, x'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
CREATE TABLE tlog_entries (
    idx        BIGINT PRIMARY KEY,
    data       BLOB   NOT NULL,
    publisher  TEXT   NOT NULL,
    agent      TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX tlog_entries_publisher ON tlog_entries (publisher, idx);
CREATE TABLE tlog_hashes (
    idx  BIGINT PRIMARY KEY,
    hash BLOB   NOT NULL
);
-- Where each version's publish entry and each key's registration are in the log (NULL: not
-- logged yet — rows older than this migration, logged at the hub's next start).
ALTER TABLE versions ADD COLUMN log_index BIGINT;
ALTER TABLE publisher_keys ADD COLUMN log_index BIGINT;
