"""A second writer of `.openagents/tasks.jsonl`, behaving as the OpenAgents loop does when it
changes the file: it takes `.openagents/agent.lock` (`<pid>\\n<ISO time>\\n<session>`, created
exclusively), reads every task, adds one and closes an earlier one of its own, and writes the
whole file back in place (truncate, then write — as the loop's writeFile does; written in two
halves with a pause between, so that a reader ignoring the lock would see a torn file), then
removes the lock.

    openagents_writer.py OPENAGENTS_DIR ROUNDS
"""

import datetime
import json
import os
import random
import sys
import time

directory, rounds = sys.argv[1], int(sys.argv[2])
lock = os.path.join(directory, "agent.lock")
tasks_path = os.path.join(directory, "tasks.jsonl")


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


def acquire():
    deadline = time.monotonic() + 30
    while True:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if time.monotonic() > deadline:
                raise SystemExit("the lock was never free")
            time.sleep(0.005)
            continue
        os.write(fd, f"{os.getpid()}\n{now()}\nscript".encode())
        os.close(fd)
        return


mine = []
for i in range(rounds):
    acquire()
    try:
        with open(tasks_path) as f:
            lines = [l for l in f.read().split("\n") if l.strip()]
        tasks = [json.loads(l) for l in lines]
        stamp = now()
        task = {
            "id": f"oa-script{i:04d}", "title": f"script task {i}", "description": "",
            "status": "open", "priority": 2, "type": "chore", "labels": ["script"],
            "deps": [], "commits": [], "createdAt": stamp, "updatedAt": stamp, "closedAt": None,
        }
        tasks.append(task)
        mine.append(task["id"])
        if len(mine) > 1:
            target = mine[-2]
            for t in tasks:
                if t["id"] == target:
                    t["status"] = "closed"
                    t["closeReason"] = "closed by the script"
                    t["closedAt"] = stamp
                    t["updatedAt"] = stamp
        payload = "".join(json.dumps(t) + "\n" for t in tasks)
        half = len(payload) // 2
        with open(tasks_path, "w") as f:
            f.write(payload[:half])
            f.flush()
            time.sleep(0.003)
            f.write(payload[half:])
    finally:
        os.unlink(lock)
    time.sleep(random.uniform(0, 0.01))
print(json.dumps({"added": mine}))
