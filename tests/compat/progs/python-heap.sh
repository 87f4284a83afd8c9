# python-heap: a heap-heavy Python script (~300 MiB of small objects).
# shellcheck shell=bash disable=SC2154
prep_python_heap() { [ -x "$PY" ] || need python3 python3 || prep_skip "$skip_reason"; }
work_python_heap() { PROMOTE_AT=1.5 sprun python "$PY" "$W/heap.py"; }
