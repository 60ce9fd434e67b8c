#!/bin/sh
# The one-shot job of the compose file's `cluster` profile: makes the Redis Cluster of its nodes serve.
#
#   REDIS_CLUSTER_CREATE_NODES="redis-node-1 ... redis-node-6"   host names, all listening on REDIS_PORT
#   REDIS_CLUSTER_REPLICAS=1                                       replicas per master
#   REDIS_PORT=6379
#
# Waits until every node answers PING; then, if the cluster was never created (no slot assigned on the
# first node), creates it (redis-cli --cluster create); if it
# exists, introduces every node to every other at its current address (CLUSTER MEET: a recreated
# container may come back on another address, and nodes find each other by the addresses they
# remember). Either way it waits until every node reports cluster_state:ok, and exits 0 then, 1 if that
# does not happen within a minute. Safe to run at every `up`.
set -eu
PORT=${REDIS_PORT:-6379}
REPLICAS=${REDIS_CLUSTER_REPLICAS:-1}
NODES=${REDIS_CLUSTER_CREATE_NODES:?set REDIS_CLUSTER_CREATE_NODES to the nodes host names}
FIRST=${NODES%% *}

say() { echo "redis-cluster-init: $*"; }
fail() { echo "redis-cluster-init: $*" >&2; exit 1; }
# CLUSTER MEET and --cluster create take addresses; the nodes are named.
address_of() { getent ahostsv4 "$1" | awk 'NR == 1 { print $1 }'; }

for node in $NODES; do
  tries=0
  until [ "$(redis-cli -h "$node" -p "$PORT" ping 2>/dev/null | tr -d '\r')" = PONG ]; do
    tries=$((tries + 1))
    [ "$tries" -lt 60 ] || fail "$node:$PORT does not answer"
    sleep 1
  done
done

assigned=$(redis-cli -h "$FIRST" -p "$PORT" cluster info | tr -d '\r' | sed -n 's/^cluster_slots_assigned://p')
if [ "$assigned" = 0 ]; then
  addresses=""
  for node in $NODES; do addresses="$addresses $(address_of "$node"):$PORT"; done
  say "creating the cluster of$addresses ($REPLICAS replicas per master)"
  # Bounded: redis-cli waits for the nodes to join with no limit of its own (a node that cannot reach
  # another's bus port would hold the job forever).
  # shellcheck disable=SC2086 # one word per node
  timeout 120 redis-cli --cluster create $addresses --cluster-replicas "$REPLICAS" --cluster-yes ||
    fail "redis-cli --cluster create did not finish within 120 s (exit $?)"
else
  say "the cluster exists ($assigned slots assigned); introducing the nodes at their current addresses"
  for node in $NODES; do
    for other in $NODES; do
      [ "$node" = "$other" ] || redis-cli -h "$node" -p "$PORT" cluster meet "$(address_of "$other")" "$PORT" >/dev/null
    done
  done
fi

for node in $NODES; do
  tries=0
  until redis-cli -h "$node" -p "$PORT" cluster info | tr -d '\r' | grep -q '^cluster_state:ok$'; do
    tries=$((tries + 1))
    [ "$tries" -lt 60 ] || fail "$node:$PORT does not report cluster_state:ok after a minute: $(redis-cli -h "$node" -p "$PORT" cluster info | tr -d '\r' | grep -E '^cluster_(state|slots_ok|known_nodes)' | tr '\n' ' ')"
    sleep 1
  done
done
say "cluster_state:ok on every node; its masters (address:port@bus-port,announced name; slots):"
redis-cli -h "$FIRST" -p "$PORT" cluster nodes | tr -d '\r' | awk '$3 ~ /master/ { print "  " $2 ";", $9, $10, $11 }'
