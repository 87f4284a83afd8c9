# sbcl: Steel Bank Common Lisp; its whole heap is one writable and executable mapping.
# shellcheck shell=bash disable=SC2154
prep_sbcl() { need sbcl sbcl || prep_skip "$skip_reason"; }
work_sbcl() { sprun sbcl sbcl --script "$W/heap.lisp"; }
