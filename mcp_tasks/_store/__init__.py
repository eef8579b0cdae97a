"""Tasks that outlive the process: `TaskRef` (what is kept of a task), the `TaskStore` protocol
and `SqliteTaskStore`, the store that ships. The store knows nothing of clients or waits; the
tasks code records into it.
Each name loads on first use (`mcp_tasks._lazy`), with only the modules it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_tasks._lazy import load_on_first_use

if TYPE_CHECKING:  # loaded on first use (below); type checkers see them here
    from mcp_tasks._store._bound import Hurry, best_effort, on_hurry, store_bound, store_deadline
    from mcp_tasks._store._error import StoreError
    from mcp_tasks._store._forward import moves_forward
    from mcp_tasks._store._holder import holder_gone, new_holder
    from mcp_tasks._store._intent import INTENT_METHODS, Intent, OutcomeUnknown
    from mcp_tasks._store._open import open_store
    from mcp_tasks._store._postgres import PostgresTaskStore
    from mcp_tasks._store._protocol import (
        CLAIM_METHOD,
        LEASE_TTL,
        STORE_METHODS,
        TaskStore,
        fences_statuses,
        lease_ttl_of,
    )
    from mcp_tasks._store._ref import NewerRecord, TaskRef
    from mcp_tasks._store._renewer import Lease, Renewer, hold, let_go
    from mcp_tasks._store._sqlite import SqliteTaskStore, default_store_path

__all__ = [
    "CLAIM_METHOD",
    "INTENT_METHODS",
    "LEASE_TTL",
    "STORE_METHODS",
    "Hurry",
    "Intent",
    "Lease",
    "NewerRecord",
    "OutcomeUnknown",
    "PostgresTaskStore",
    "Renewer",
    "SqliteTaskStore",
    "StoreError",
    "TaskRef",
    "TaskStore",
    "best_effort",
    "default_store_path",
    "fences_statuses",
    "hold",
    "holder_gone",
    "lease_ttl_of",
    "let_go",
    "moves_forward",
    "new_holder",
    "on_hurry",
    "open_store",
    "store_bound",
    "store_deadline",
]

if not TYPE_CHECKING:  # (type checkers see the imports above)
    __getattr__ = load_on_first_use(
        globals(),
        {
            "mcp_tasks._store._bound": ("Hurry", "best_effort", "on_hurry", "store_bound", "store_deadline"),
            "mcp_tasks._store._error": ("StoreError",),
            "mcp_tasks._store._forward": ("moves_forward",),
            "mcp_tasks._store._holder": ("holder_gone", "new_holder"),
            "mcp_tasks._store._intent": ("INTENT_METHODS", "Intent", "OutcomeUnknown"),
            "mcp_tasks._store._open": ("open_store",),
            "mcp_tasks._store._postgres": ("PostgresTaskStore",),
            "mcp_tasks._store._protocol": (
                "CLAIM_METHOD",
                "LEASE_TTL",
                "STORE_METHODS",
                "TaskStore",
                "fences_statuses",
                "lease_ttl_of",
            ),
            "mcp_tasks._store._ref": ("NewerRecord", "TaskRef"),
            "mcp_tasks._store._renewer": ("Lease", "Renewer", "hold", "let_go"),
            "mcp_tasks._store._sqlite": ("SqliteTaskStore", "default_store_path"),
        },
    )
