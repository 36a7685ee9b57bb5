"""A small OFC agent for ofc's tests: answers @pyecho with the last message, shouted by its
dependency `ofc-py-shout`. Serves the OFC agent API on 127.0.0.1:$OFC_PORT."""
