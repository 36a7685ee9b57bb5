-- Token management got its own scope (`manage-tokens`). Tokens that held every scope a login
-- token gets keep managing tokens; narrower tokens lose it, which is the point.
UPDATE api_tokens
SET scopes = scopes || ',manage-tokens'
WHERE (',' || scopes || ',') LIKE '%,publish-new,%'
  AND (',' || scopes || ',') LIKE '%,publish-update,%'
  AND (',' || scopes || ',') LIKE '%,yank,%'
  AND (',' || scopes || ',') LIKE '%,manage-keys,%'
  AND (',' || scopes || ',') LIKE '%,manage-members,%'
  AND (',' || scopes || ',') NOT LIKE '%,manage-tokens,%';
