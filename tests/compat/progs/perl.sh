# perl: hashes, arrays, regular expressions, sort, pack, Digest::MD5.
# shellcheck shell=bash disable=SC2154
prep_perl() { need perl perl || prep_skip "$skip_reason"; }
work_perl() { sprun perl perl "$W/heap.pl"; }
