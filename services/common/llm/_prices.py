"""Dollar estimates per call from list prices, for spans and budgets (not invoices).

A model the table does not know (a local model, a new name) costs ``None``: unknown,
never a made-up zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million tokens; estimates for spans and budgets, not invoices."""

    input_per_million: float
    output_per_million: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (
            input_tokens * self.input_per_million + output_tokens * self.output_per_million
        ) / 1_000_000


# Published list prices (prompts under 200k tokens); pass ``prices=`` to override.
DEFAULT_PRICES: Mapping[str, ModelPrice] = {
    "gemini-2.5-pro": ModelPrice(1.25, 10.00),
    "gemini-2.5-flash": ModelPrice(0.30, 2.50),
    "gemini-2.5-flash-lite": ModelPrice(0.10, 0.40),
    "gemini-2.0-flash": ModelPrice(0.10, 0.40),
    "gemini-2.0-flash-lite": ModelPrice(0.075, 0.30),
}


def estimate_cost(
    model: str, input_tokens: int, output_tokens: int, prices: Mapping[str, ModelPrice]
) -> float | None:
    """Dollar estimate for a call; versioned names match their family; unknown → None."""
    name = model.removeprefix("models/")
    for candidate in sorted(prices, key=len, reverse=True):
        if name == candidate or name.startswith(candidate + "-"):
            return round(prices[candidate].cost(input_tokens, output_tokens), 8)
    return None
