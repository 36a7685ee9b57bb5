-- A registry-API registration holds its floor handle alone, hub-wide and in any letter case
-- (seed 000: floors look agents up by handle, so a second registration of a handle would shadow
-- the first). The hub refuses such a registration; this index makes the database refuse it too,
-- so two concurrent registrations cannot both get past the check.
--
-- Registrations made before the rule may share a handle. The oldest keeps it (it was there
-- first; the later ones were take-overs); each later one loses its handle, so no floor finds it
-- by handle any more, but it stays, by name, for its namespace or an administrator to remove.
-- Each such change is in the audit log.
INSERT INTO audit_log (at, user_id, user_name, token_id, action, target, detail)
SELECT CAST(strftime('%s', 'now') AS INTEGER) * 1000, NULL, 'operator (migration 0011)', NULL,
       'registry.handle_released', a.name,
       'handle @' || lower(a.handle) || ' stays with the older registration ' || (
           SELECT o.name FROM agents o
           WHERE o.registry_endpoint IS NOT NULL AND lower(o.handle) = lower(a.handle)
           ORDER BY o.created_at, o.id LIMIT 1)
FROM agents a
WHERE a.registry_endpoint IS NOT NULL AND a.handle IS NOT NULL AND EXISTS (
    SELECT 1 FROM agents o
    WHERE o.registry_endpoint IS NOT NULL AND lower(o.handle) = lower(a.handle)
      AND (o.created_at < a.created_at OR (o.created_at = a.created_at AND o.id < a.id)));

UPDATE agents SET handle = NULL
WHERE registry_endpoint IS NOT NULL AND handle IS NOT NULL AND EXISTS (
    SELECT 1 FROM agents o
    WHERE o.registry_endpoint IS NOT NULL AND lower(o.handle) = lower(agents.handle)
      AND (o.created_at < agents.created_at OR (o.created_at = agents.created_at AND o.id < agents.id)));

CREATE UNIQUE INDEX agents_registry_handle ON agents (lower(handle))
    WHERE registry_endpoint IS NOT NULL;
-- Handle look-ups compare in lowercase.
CREATE INDEX agents_handle_lower ON agents (lower(handle));
