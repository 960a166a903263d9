from __future__ import annotations

from typing import Any, Mapping, Optional


class TraceAllocError(Exception):
    """Every rejection: an error response from the service, input refused on the Python side
    (NaN, wrong shape or dtype), or a service that stopped answering.

    `code` is the protocol's error code (`invalid_value`, `unknown_tree`, ...; `service_error`
    when the service process failed); `tree`, `node` and `field` say where, when known.
    """

    code: str
    tree: Optional[str]
    node: Optional[int]
    field: Optional[str]

    def __init__(self, code: str, message: str, tree: Optional[str] = None, node: Optional[int] = None,
                 field: Optional[str] = None) -> None:
        self.code = code
        self.tree = tree
        self.node = node
        self.field = field
        self.message = message
        super().__init__("%s: %s" % (code, message))

    @classmethod
    def from_response(cls, error: Mapping[str, Any]) -> "TraceAllocError":
        return cls(str(error.get("code", "internal")), str(error.get("message", "")), error.get("tree"),
                   error.get("node"), error.get("field"))
