"""Builds a pure-Python wheel (PEP 427) from a package folder, with the standard library only.

usage: build_wheel.py OUT_DIR NAME VERSION PACKAGE_DIR [--requires REQ]... [--script NAME=MOD:FN]...
       [--salt TEXT]

Prints the wheel's path. `--salt` adds a file, so that two builds of one version differ (for
tests of an index serving another file than the signed one)."""

import base64
import hashlib
import os
import sys
import zipfile


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def main(argv):
    out, name, version, pkg_dir = argv[:4]
    requires, scripts, salt = [], [], None
    rest = argv[4:]
    while rest:
        flag, value, rest = rest[0], rest[1], rest[2:]
        if flag == "--requires":
            requires.append(value)
        elif flag == "--script":
            scripts.append(value)
        elif flag == "--salt":
            salt = value
        else:
            raise SystemExit(f"unknown flag {flag}")
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {}
    pkg = os.path.basename(os.path.normpath(pkg_dir))
    for root, _, names in os.walk(pkg_dir):
        for n in sorted(names):
            if n.endswith(".pyc"):
                continue
            full = os.path.join(root, n)
            rel = os.path.join(pkg, os.path.relpath(full, pkg_dir)).replace(os.sep, "/")
            with open(full, "rb") as f:
                files[rel] = f.read()
    if salt is not None:
        files[f"{pkg}/_salt.py"] = f"SALT = {salt!r}\n".encode()
    meta = [f"Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    files[f"{info}/METADATA"] = ("\n".join(meta) + "\n").encode()
    files[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: ofc-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    ).encode()
    if scripts:
        lines = ["[console_scripts]"] + [s.replace("=", " = ", 1) for s in scripts]
        files[f"{info}/entry_points.txt"] = ("\n".join(lines) + "\n").encode()
    record = [record_line(p, d) for p, d in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"{dist}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p, d in files.items():
            z.writestr(zipfile.ZipInfo(p, (2020, 1, 1, 0, 0, 0)), d)
    print(path)


if __name__ == "__main__":
    main(sys.argv[1:])
