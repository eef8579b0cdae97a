"""Tasks that outlive the process: `TaskRef` (what is kept of a task), the `TaskStore` protocol
and `SqliteTaskStore`, the store that ships. The store knows nothing of clients or waits; the
tasks code records into it.
"""

from mcp_tasks._store._bound import Hurry, best_effort, on_hurry, store_bound, store_deadline
from mcp_tasks._store._error import StoreError
from mcp_tasks._store._holder import holder_gone, new_holder
from mcp_tasks._store._open import open_store
from mcp_tasks._store._postgres import PostgresTaskStore
from mcp_tasks._store._protocol import CLAIM_METHOD, LEASE_TTL, STORE_METHODS, TaskStore, lease_ttl_of
from mcp_tasks._store._ref import NewerRecord, TaskRef
from mcp_tasks._store._renewer import Lease, Renewer, hold, let_go
from mcp_tasks._store._sqlite import SqliteTaskStore, default_store_path

__all__ = [
    "CLAIM_METHOD",
    "LEASE_TTL",
    "STORE_METHODS",
    "Hurry",
    "Lease",
    "NewerRecord",
    "PostgresTaskStore",
    "Renewer",
    "SqliteTaskStore",
    "StoreError",
    "TaskRef",
    "TaskStore",
    "best_effort",
    "default_store_path",
    "hold",
    "holder_gone",
    "lease_ttl_of",
    "let_go",
    "new_holder",
    "on_hurry",
    "open_store",
    "store_bound",
    "store_deadline",
]
