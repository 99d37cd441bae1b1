from __future__ import annotations

import sys
from pathlib import Path

# The workload module is imported by name, here and by worker processes (`--setup workload:setup`).
sys.path.insert(0, str(Path(__file__).parent))
