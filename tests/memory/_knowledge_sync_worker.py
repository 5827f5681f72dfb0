"""One process syncing a Knowledge folder, for test_memory_knowledge_processes.py.

``python _knowledge_sync_worker.py STORE FOLDER GO``: STORE is a SQLite file or a postgresql://
URL. Prints ``ready``, waits (at most 60 s) for the file GO to exist so that every process
starts syncing at the same moment, syncs, and prints its SyncReport as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from agentensemble.memory import Knowledge, PostgresMemory, SQLiteMemory

STORE, FOLDER, GO = sys.argv[1:4]
store = PostgresMemory(STORE) if STORE.startswith("postgresql://") else SQLiteMemory(STORE)
knowledge = Knowledge([FOLDER], scope="kb")
print("ready", flush=True)
deadline = time.monotonic() + 60
while not Path(GO).exists():
    if time.monotonic() > deadline:
        sys.exit("no go signal")
    time.sleep(0.005)
report = knowledge.sync(store)
print(json.dumps({"added": report.added, "updated": report.updated}), flush=True)
