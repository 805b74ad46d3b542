"""Where the policy meets a request: the catalog a principal sees, and a checked
statement made into the one that may run for the principal."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from services.common import Principal, current_principal
from services.sql.access._enforce import Denial, check, hidden_named, rewrite
from services.sql.access._policy import AccessPolicy
from services.sql.access._values import ValueReader, with_visible_values
from services.sql.access._view import DERIVED_KEY, BoundPolicy, view_key
from services.sql.catalog import Catalog


def bind(catalog: Catalog, policy: AccessPolicy | None) -> None:
    """Resolve ``policy`` against ``catalog`` once per load (PolicyError, naming the file
    and the key, for a name the catalog lacks); the catalog then carries it."""
    if policy is not None and DERIVED_KEY not in catalog.derived:
        catalog.derived[DERIVED_KEY] = BoundPolicy(policy, catalog)


def bound_policy(catalog: object) -> BoundPolicy | None:
    derived = getattr(catalog, "derived", None)
    found = derived.get(DERIVED_KEY) if isinstance(derived, dict) else None
    return found if isinstance(found, BoundPolicy) else None


def catalog_view(catalog: Catalog) -> Catalog:
    """The catalog the current request's principal is linked, described and gated
    against: without what it may not read (the whole catalog for a service key, or a
    database without a policy)."""
    principal = current_principal.get()
    bound = bound_policy(catalog)
    if principal is None or bound is None:
        return catalog
    return bound.catalog_for(bound.view(principal))


async def asking_view(catalog: Catalog, read: ValueReader) -> Catalog:
    """The catalog the current request's question is linked against: :func:`catalog_view`,
    with the stored values of its filtered tables that the principal's own rows hold, read
    through their view once per load and filter (``_values``). Never a read for a service
    key or a database without a policy (the full catalog, as :func:`catalog_view`)."""
    principal = current_principal.get()
    bound = bound_policy(catalog)
    if principal is None or bound is None:
        return catalog
    view = bound.view(principal)
    restricted_catalog = bound.catalog_for(view)
    if not (view.filters or view.secured) or view.role_problem:
        return restricted_catalog
    found = bound.valued(view.values_key)
    if found is None:
        found, complete = await with_visible_values(restricted_catalog, bound.catalog, view, read)
        if complete:
            bound.keep_valued(view.values_key, found)
    return found


@dataclass(frozen=True)
class Enforced:
    """A checked statement as it may run for one principal: the text with the view's
    derived tables (``executed_sql``; "" when nothing changed), the role to run it as,
    and why it may not run at all (``denials``)."""

    view: str
    executed_sql: str = ""
    role: str = ""
    denials: tuple[Denial, ...] = ()


def enforce(tree: exp.Expr, catalog: object, principal: Principal | None) -> Enforced:
    """``tree`` (the gate's checked, schema-qualified tree; changed in place) for
    ``principal``: rewritten (:func:`rewrite`), rendered, parsed back and checked
    (:func:`check`) as the text that will run."""
    key = view_key(principal)
    bound = bound_policy(catalog)
    if (
        principal is not None
        and bound is None
        and isinstance(catalog, Catalog)
        and catalog.access_view
    ):
        # A principal's view of a load (``restricted``) always carries its policy; one
        # that lost it (a catalog rebuilt from it without ``Catalog.narrowed``) would let
        # the statement run with no row filter: refused, never run unfiltered.
        return Enforced(key, denials=(Denial("policy", "the principal's access policy "
                                             "was not found beside their catalog"),))  # fmt: skip
    if principal is None or bound is None:
        return Enforced(key)
    view = bound.view(principal)
    if view.role_problem:
        return Enforced(key, denials=(Denial("role", view.role_problem),))
    named = hidden_named(tree, view, bound.catalog)
    if named:
        return Enforced(key, denials=tuple(named))
    if not rewrite(tree, view, bound.catalog):
        # Nothing the view polices is scanned: the statement runs as checked (the walk
        # below still checks it, independently of the rewriter's own finding).
        denials = check(tree, view, bound.catalog)
        return Enforced(key, "", view.role or "", tuple(denials))
    # The walk reads the very tree the text is rendered from (the gate already showed
    # the statement survives a render and a parse unchanged; the derived tables added
    # are built from catalog names and the policy's parsed filter).
    denials = check(tree, view, bound.catalog)
    if denials:
        return Enforced(key, denials=tuple(denials))
    # Rendered in place (no copy): the tree is the gate's own, read by nothing after.
    text = tree.sql(dialect="postgres", comments=False, copy=False)
    return Enforced(key, text, view.role or "")
