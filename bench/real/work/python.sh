# python: a pyperformance-like set written here (bench/real/pyset.py): a dict of 2M
# entries read at random, object graph churn, nbody, json, regex, sort.
# shellcheck shell=bash disable=SC2034,SC2154
title='python3 set (bench/real/pyset.py)'
set=quick
needs='python3:python3'
metric='^python: ([0-9.]+) '
ignore=' per s$'
extras='bigdict=^bigdict ([0-9.]+) per s
objects=^objects ([0-9.]+) per s
nbody=^nbody ([0-9.]+) per s
json=^json ([0-9.]+) per s
regex=^regex ([0-9.]+) per s
sort=^sort ([0-9.]+) per s'

run() { # dir
	exec python3 "$real/pyset.py"
}
