"""Run the toolnexus family's reference port (``toolnexus`` 0.21 from the index) on a
skills folder and print what a model would see, as JSON.

Not part of the package and not imported by the tests: tests/test_skills_reference.py
runs it with the interpreter of a venv that has ``toolnexus==0.21.0`` installed (a
different distribution with the same import name, so it cannot share our venv).
``python run_reference.py FOLDER NAME...`` prints ``{"prompt", "description",
"schema", "outputs": {NAME: [output, is_error]}}``.
"""

from __future__ import annotations

import asyncio
import json
import sys

from toolnexus.skill import load_skills  # the reference's own module


def main(folder: str, names: list[str]) -> None:
    source = load_skills(folder)
    outputs = {}
    for name in names:
        result = asyncio.run(source.tool.execute({"name": name}))
        outputs[name] = [result.output, result.is_error]
    print(
        json.dumps(
            {
                "prompt": source.prompt(),
                "description": source.tool.description,
                "schema": source.tool.input_schema,
                "names": sorted(source.skills),
                "outputs": outputs,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
