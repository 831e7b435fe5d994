#!/usr/bin/env bash
# Make headless Chromium available to the results site's browser test (tests/test_site.py). Installs
# Debian's package where it is missing and apt-get can; otherwise says so, and that test skips with
# the reason.
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    && exit 0
fi
echo "note: Chromium could not be installed here; the results site's browser test will skip" >&2
