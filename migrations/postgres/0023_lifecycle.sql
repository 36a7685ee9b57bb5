-- Issue 33, the life of a version (additive: old replicas keep working on this schema).
-- The agent a deprecation names to use instead (`publisher/agent`), beside its message.
ALTER TABLE versions ADD COLUMN deprecated_successor TEXT;
-- A tombstone of a removal says what was removed and why: the manifest digest that is gone
-- and the reason class (`unpublished` by its publisher, or an operator takedown's class:
-- malware, legal, security, abuse, policy). NULL on tombstones of `ofc-hub admin delete`
-- (and of deletions before this migration): removed, reason not given.
ALTER TABLE deleted_versions ADD COLUMN manifest_digest TEXT;
ALTER TABLE deleted_versions ADD COLUMN reason_class TEXT;
