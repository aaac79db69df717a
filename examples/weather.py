"""Plain tools: a function with type hints and a docstring is all a tool needs.

Copy this file to start your own. Try it from the folder above ``examples/``::

    toolnexus list examples/weather.py
    toolnexus schema examples/weather.py forecast --format anthropic
    toolnexus call examples/weather.py forecast city=Paris days=2
    toolnexus call examples/weather.py to_fahrenheit celsius=21.5
"""

from __future__ import annotations

from typing import Literal

from toolnexus import tool

# Made-up but stable numbers: an example must print the same thing every time.
_BASE_CELSIUS = {"paris": 14.0, "oslo": 6.0, "cairo": 27.0, "lima": 19.0}


@tool(read_only=True)
def forecast(
    city: str, days: int = 3, units: Literal["celsius", "fahrenheit"] = "celsius"
) -> dict[str, object]:
    """Forecast the daily temperature in a city (invented numbers, for trying things out).

    Args:
        city: the city's name, e.g. "Paris".
        days: how many days ahead, 1 to 7.
        units: the temperature scale.
    """
    if not 1 <= days <= 7:
        # A plain exception becomes an error result the model can read and correct.
        raise ValueError(f"days must be between 1 and 7, got {days}")
    base = _BASE_CELSIUS.get(city.lower(), 20.0)
    temperatures = [base + day * 0.5 for day in range(days)]
    if units == "fahrenheit":
        temperatures = [round(t * 9 / 5 + 32, 1) for t in temperatures]
    return {"city": city, "units": units, "daily": temperatures}


@tool(read_only=True, idempotent=True)
def to_fahrenheit(celsius: float) -> float:
    """Convert a temperature from Celsius to Fahrenheit.

    Args:
        celsius: the temperature in degrees Celsius.
    """
    return round(celsius * 9 / 5 + 32, 2)
