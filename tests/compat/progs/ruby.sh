# ruby: ~280 MiB of Ruby objects, collected and summed.
# shellcheck shell=bash disable=SC2154
prep_ruby() { need ruby ruby || prep_skip "$skip_reason"; }
work_ruby() { sprun ruby ruby "$W/heap.rb"; }
