#!/bin/sh
# HAProxy's external check of one Galera node (haproxy.cfg here): passes only while the node is Synced
# (wsrep_local_state 4) and takes queries (wsrep_ready ON). HAProxy's own mysql-check only sees that
# mariadbd answers a handshake, which a node that left the primary component still does, while it
# refuses every query ("WSREP has not yet prepared node for application use"), and which a donor or a
# joiner does too.
#
# HAProxy calls it as: wsrep-check.sh <proxy address> <proxy port> <server address> <server port>.
# The account: GALERA_CHECK_USER (default root) and GALERA_CHECK_PASSWORD (default empty), from
# HAProxy's environment; it needs no privilege beyond USAGE.
set -u
host="$3"
port="$4"
status=$(MYSQL_PWD="${GALERA_CHECK_PASSWORD:-}" mariadb --no-defaults --connect-timeout=1 --protocol=TCP \
  -h "$host" -P "$port" -u "${GALERA_CHECK_USER:-root}" -N -B \
  -e "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state')" 2>/dev/null) || exit 1
echo "$status" | grep -q "^wsrep_local_state[[:space:]]4$" || exit 1
echo "$status" | grep -q "^wsrep_ready[[:space:]]ON$" || exit 1
exit 0
