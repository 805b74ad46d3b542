"""A ghz-compatible gRPC load driver (``tandem load``) and the benchmark report
(``tandem bench report``).

Any RPC in the generated descriptors can be driven by its full name with JSON call data;
the printed summary and the JSON report have ghz's shape and ghz's definitions.
"""

from services.load._methods import (
    LoadConfigError,
    MethodInfo,
    RequestFactory,
    parse_json_argument,
    parse_metadata,
    resolve_method,
)
from services.load._options import from_ghz_config, parse_duration
from services.load._runner import LoadOptions, TargetUnreachable, run_load
from services.load._stats import (
    PERCENTILES,
    Bucket,
    CallResult,
    Report,
    build_report,
    format_summary,
    status_name,
)

__all__ = [
    "PERCENTILES",
    "Bucket",
    "CallResult",
    "LoadConfigError",
    "LoadOptions",
    "MethodInfo",
    "Report",
    "RequestFactory",
    "TargetUnreachable",
    "build_report",
    "format_summary",
    "from_ghz_config",
    "parse_duration",
    "parse_json_argument",
    "parse_metadata",
    "resolve_method",
    "run_load",
    "status_name",
]
