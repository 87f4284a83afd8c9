# node: a script written here (bench/real/churn.js): trees of small objects built and
# dropped, a Map of 1M entries read and rewritten at random, a JSON round trip of 100k
# records, 1M records sorted by a key; V8's old space up to 2 GiB.
# shellcheck shell=bash disable=SC2034,SC2154
title='node object churn, Map, JSON, sort (bench/real/churn.js)'
set=full
needs='node:nodejs'
metric='^node: ([0-9.]+) '
ignore=' per s$'
extras='objects=^objects ([0-9.]+) per s
maps=^maps ([0-9.]+) per s
json=^json ([0-9.]+) per s
sort=^sort ([0-9.]+) per s'
node_scale=${RB_NODE_SCALE:-1}

run() { # dir
	exec node --max-old-space-size=2048 "$real/churn.js" "$node_scale"
}
