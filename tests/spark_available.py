"""What a Spark test needs and may lack (pyspark, pyarrow, pandas, Java 17+): one check, shared
by tests/distributed/conftest.py and the README's Spark block (tests/docs/test_readme.py)."""
import importlib.util
import os
import shutil
from typing import Optional


def spark_missing() -> Optional[str]:
    """Why Spark cannot run here (one line), or None when it can."""
    for mod in ("pyspark", "pyarrow", "pandas"):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not installed (pip install 'dpnoise[spark]')"
    home = os.environ.get("JAVA_HOME")
    if not (home and os.access(os.path.join(home, "bin", "java"), os.X_OK)) and shutil.which("java") is None:
        return "Java is not installed (Spark needs Java 17+: set JAVA_HOME or put java on PATH)"
    return None
