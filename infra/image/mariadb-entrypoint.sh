#!/bin/sh
# The local stand-in for the official mariadb image's entry point, for the variables
# infra/docker-compose.yml sets: on an empty data directory, initialises it, sets root's password
# (MARIADB_ROOT_PASSWORD, or none with MARIADB_ALLOW_EMPTY_ROOT_PASSWORD), creates MARIADB_DATABASE and
# MARIADB_USER with every privilege on it, and a `healthcheck` account for healthcheck.sh; then runs
# mariadbd in the foreground. Arguments starting with `-` are mariadbd's, as in the official image.
set -eu

if [ "${1#-}" != "$1" ] || [ $# -eq 0 ]; then set -- mariadbd "$@"; fi
if [ "$1" != mariadbd ]; then exec "$@"; fi

DATADIR=/var/lib/mysql
SOCKET=/run/mysqld/mysqld.sock
mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld

# Every character but the quote is safe between single quotes in SQL once quotes and backslashes are doubled.
sql_quote() { printf "%s" "$1" | sed -e "s/\\\\/\\\\\\\\/g" -e "s/'/''/g"; }

if [ ! -d "$DATADIR/mysql" ]; then
  if [ -z "${MARIADB_ROOT_PASSWORD:-}" ] && [ "${MARIADB_ALLOW_EMPTY_ROOT_PASSWORD:-}" != yes ] && [ "${MARIADB_ALLOW_EMPTY_ROOT_PASSWORD:-}" != 1 ]; then
    echo "mariadb: set MARIADB_ROOT_PASSWORD, or MARIADB_ALLOW_EMPTY_ROOT_PASSWORD=yes" >&2
    exit 1
  fi
  echo "mariadb: initialising $DATADIR"
  chown mysql:mysql "$DATADIR"
  mariadb-install-db --user=mysql --datadir="$DATADIR" --auth-root-authentication-method=normal --skip-test-db >/dev/null
  mariadbd --user=mysql --datadir="$DATADIR" --skip-networking --socket="$SOCKET" &
  init_pid=$!
  for _ in $(seq 1 60); do mariadb-admin --socket="$SOCKET" -uroot ping >/dev/null 2>&1 && break; sleep 0.5; done
  health_password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  root_password=$(sql_quote "${MARIADB_ROOT_PASSWORD:-}")
  {
    echo "CREATE USER 'root'@'%' IDENTIFIED BY '$root_password';"
    echo "GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;"
    echo "ALTER USER 'root'@'localhost' IDENTIFIED BY '$root_password';"
    echo "CREATE USER 'healthcheck'@'localhost' IDENTIFIED BY '$health_password';"
    echo "GRANT USAGE ON *.* TO 'healthcheck'@'localhost';"
    if [ -n "${MARIADB_DATABASE:-}" ]; then
      echo "CREATE DATABASE IF NOT EXISTS \`$MARIADB_DATABASE\`;"
      if [ -n "${MARIADB_USER:-}" ]; then
        echo "CREATE USER '$(sql_quote "$MARIADB_USER")'@'%' IDENTIFIED BY '$(sql_quote "${MARIADB_PASSWORD:-}")';"
        echo "GRANT ALL ON \`$MARIADB_DATABASE\`.* TO '$(sql_quote "$MARIADB_USER")'@'%';"
      fi
    fi
  } | mariadb --socket="$SOCKET" -uroot
  printf '[mariadb-client]\nuser=healthcheck\npassword=%s\nsocket=%s\n' "$health_password" "$SOCKET" > "$DATADIR/.my-healthcheck.cnf"
  chown mysql:mysql "$DATADIR/.my-healthcheck.cnf" && chmod 600 "$DATADIR/.my-healthcheck.cnf"
  kill "$init_pid" && wait "$init_pid" || true
  echo "mariadb: initialised"
fi

exec "$@" --user=mysql --datadir="$DATADIR" --socket="$SOCKET"
