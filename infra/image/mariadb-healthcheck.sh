#!/bin/sh
# The local stand-in for the official mariadb image's healthcheck.sh, for the two tests
# infra/docker-compose.yml asks of it: --connect (the server takes a connection) and
# --innodb_initialized (InnoDB is up). Through the socket, as the `healthcheck` account the entry point made.
set -eu
ask() { mariadb --defaults-extra-file=/var/lib/mysql/.my-healthcheck.cnf --skip-column-names -e "$1"; }
[ $# -gt 0 ] || set -- --connect
for test in "$@"; do
  case "$test" in
    --connect) ask 'SELECT 1' >/dev/null ;;
    --innodb_initialized) [ "$(ask "SELECT 1 FROM information_schema.ENGINES WHERE engine = 'InnoDB' AND support IN ('YES', 'DEFAULT')")" = 1 ] ;;
    *) echo "healthcheck.sh: unknown test $test" >&2; exit 2 ;;
  esac
done
