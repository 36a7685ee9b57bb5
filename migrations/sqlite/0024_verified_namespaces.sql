-- Issue 33 point 3, verified namespaces and look-alike names (additive: old replicas keep
-- working on this schema).
-- A namespace's skeleton: its name with the look-alikes folded (separators `-`/`_` dropped,
-- `rn`→`m`, `vv`→`w`, `0`→`o`, `1`→`l`, `i`→`l`; hub-core `domains::skeleton`, which must fold
-- the same way). A new namespace whose skeleton is taken is refused; existing look-alikes stay.
ALTER TABLE namespaces ADD COLUMN skeleton TEXT;
UPDATE namespaces SET skeleton =
    REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(
        LOWER(name), '-', ''), '_', ''), 'rn', 'm'), 'vv', 'w'), '0', 'o'), '1', 'l'), 'i', 'l');
CREATE INDEX namespaces_skeleton ON namespaces (skeleton);
-- The domain a namespace claimed and proved (one a namespace): by an HTTPS file or a DNS TXT
-- record naming one of its keys (`key_id`). Re-checked every `verify_recheck_secs`; a failed
-- re-check sets `lapsed_at` (the first failure) and `lapse_reason`, a passing one clears them.
CREATE TABLE namespace_domains (
    namespace_id BIGINT NOT NULL PRIMARY KEY REFERENCES namespaces(id) ON DELETE CASCADE,
    domain       TEXT   NOT NULL,
    method       TEXT   NOT NULL,
    key_id       TEXT   NOT NULL,
    claimed_by   BIGINT REFERENCES users(id),
    verified_at  BIGINT NOT NULL,
    checked_at   BIGINT NOT NULL,
    lapsed_at    BIGINT,
    lapse_reason TEXT
);
CREATE INDEX namespace_domains_checked ON namespace_domains (checked_at);
