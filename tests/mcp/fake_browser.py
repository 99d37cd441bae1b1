"""A "browser" for the OAuth test: ``$BROWSER`` runs it with the sign-in address; it follows the
redirects as a browser would (the test server approves at once) until tether's callback
answers, and records the address it was given."""

from __future__ import annotations

import os
import sys
import urllib.request

with open(os.environ["FAKE_BROWSER_LOG"], "a") as log:
    log.write(sys.argv[1] + "\n")
with urllib.request.urlopen(sys.argv[1], timeout=30) as page:
    page.read()
