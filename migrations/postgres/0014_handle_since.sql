-- When an agent took the handle it has now: a handle shared by published agents belongs to the
-- one that took it first (not to the oldest agent, which could take over a handle in use by
-- changing its id). Existing agents count from their creation.
ALTER TABLE agents ADD COLUMN handle_since BIGINT;
UPDATE agents SET handle_since = created_at;
