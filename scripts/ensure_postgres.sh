#!/usr/bin/env bash
# Make a PostgreSQL server available to the tests (tests/conftest.py starts its own with initdb and
# pg_ctl in a temporary directory). Installs Debian's package where it is missing and apt-get can;
# otherwise says so, and the PostgreSQL tests skip with the reason.
if command -v initdb >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) \
    && exit 0
fi
echo "note: no PostgreSQL server could be installed here; the PostgreSQL tests will skip" >&2
