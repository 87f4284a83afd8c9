# guile: GNU Guile 3.0; Boehm GC grows its heap by mappings at address hints.
# shellcheck shell=bash disable=SC2154
prep_guile() { need guile guile-3.0 || prep_skip "$skip_reason"; }
work_guile() { sprun guile guile --no-auto-compile "$W/heap.scm"; }
