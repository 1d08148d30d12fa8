"""Built-in scenario library of contactlab (registered through an entry point)."""

SCENARIOS: dict = {}
