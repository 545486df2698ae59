"""``stepfork.export.generator``: the earlier implementation's path of the pytest generator (issue 32).

The same objects as :mod:`stepfork.analysis.export` (one implementation): ``generate_pytest_source``
returns the test's source (str), ``export_pytest_test`` writes it atomically and returns the written path;
both raise ``ExportError`` (``ExportExistsError`` for an existing file without ``overwrite``).
"""

from stepfork.analysis.export import (
    ExportError,
    ExportExistsError,
    export_pytest_test,
    generate_pytest_source,
)

__all__ = ["ExportError", "ExportExistsError", "export_pytest_test", "generate_pytest_source"]
