"""Drives oras (the PyPI OCI client) against the hub for the OCI tests.

    oras_agent.py push HOST REPO:TAG TOKEN ENVELOPE BUNDLE
        pushes an ofc agent artifact: ENVELOPE as the config, BUNDLE as the single layer
    oras_agent.py pull HOST REPO:TAG OUTDIR
        pulls anonymously; prints the paths of the files written, one a line
"""

import atexit
import os
import shutil
import sys
import tempfile

import oras.client

ENVELOPE = "application/vnd.ofc.agent.envelope.v1+json"
BUNDLE = "application/vnd.ofc.agent.bundle.v1.tar+gzip"


def main() -> None:
    cmd, host, target = sys.argv[1], sys.argv[2], sys.argv[3]
    # oras reads and `login` writes ~/.docker/config.json: concurrent test processes would
    # read each other's half-written file (and leave test tokens in the user's config).
    # Each run gets a home of its own.
    home = tempfile.mkdtemp(prefix="oras-home-")
    os.environ["HOME"] = home
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    client = oras.client.OrasClient(hostname=host, insecure=True)
    ref = f"{host}/{target}"
    if cmd == "push":
        token, envelope, bundle = sys.argv[4], sys.argv[5], sys.argv[6]
        client.login(username="ofc", password=token, hostname=host)
        # oras only pushes files relative to the working directory.
        os.chdir(os.path.dirname(os.path.abspath(bundle)))
        resp = client.push(
            target=ref,
            files=[f"{os.path.basename(bundle)}:{BUNDLE}"],
            manifest_config=f"{os.path.abspath(envelope)}:{ENVELOPE}",
            quiet=True,
        )
        print(resp.status_code)
    elif cmd == "pull":
        outdir = sys.argv[4]
        for f in client.pull(target=ref, outdir=outdir):
            print(f)
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
