"""Router service: plan → execute in parallel waves → replan keeping finished work →
cited synthesis, with the agentic RAG loop, guardrails and streaming."""

from __future__ import annotations

from services.router._clients import (
    GrpcSearchTool,
    GrpcSqlTool,
    SearchTool,
    SqlTool,
    ToolError,
)
from services.router._engine import Router
from services.router._guard import check_output, scan
from services.router._plan import PlanInvalid, assign_waves, bind, validate
from services.router._server import RouterDeps, build_deps, create_server, ready
from services.router._settings import DEFAULT_PORT, GuardrailSettings, RouterSettings
from services.router._types import (
    AskInput,
    Hit,
    Mode,
    Options,
    Outcome,
    RouterAnswer,
    SearchOutcome,
    SqlOutcome,
    Status,
)

__all__ = [
    "DEFAULT_PORT",
    "AskInput",
    "GrpcSearchTool",
    "GrpcSqlTool",
    "GuardrailSettings",
    "Hit",
    "Mode",
    "Options",
    "Outcome",
    "PlanInvalid",
    "Router",
    "RouterAnswer",
    "RouterDeps",
    "RouterSettings",
    "SearchOutcome",
    "SearchTool",
    "SqlOutcome",
    "SqlTool",
    "Status",
    "ToolError",
    "assign_waves",
    "bind",
    "build_deps",
    "check_output",
    "create_server",
    "ready",
    "scan",
    "validate",
]
