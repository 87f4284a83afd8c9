# node: ~500 MiB of JS heap (objects, Maps, strings, typed arrays).
# shellcheck shell=bash disable=SC2154
prep_node() { need node nodejs || prep_skip "$skip_reason"; }
work_node() { sprun node node --max-old-space-size=1024 "$W/heap.js"; }
