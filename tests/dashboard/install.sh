#!/bin/sh
# What tests/dashboard needs on a fresh Debian 12 machine (run as root, after `make setup`):
# Debian's Chromium, and Playwright's Python package, which drives it. Playwright's own browser
# download (`playwright install`) is never used: the tests launch /usr/bin/chromium.
set -eu
cd "$(dirname "$0")/../.."

if [ ! -x /usr/bin/chromium ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
.venv/bin/pip install --quiet --disable-pip-version-check playwright==1.65.2
