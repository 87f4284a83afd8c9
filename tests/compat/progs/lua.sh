# lua: Lua 5.4 tables and strings.
# shellcheck shell=bash disable=SC2154
prep_lua() { need lua5.4 lua5.4 || prep_skip "$skip_reason"; }
work_lua() { sprun lua lua5.4 "$W/heap.lua"; }
