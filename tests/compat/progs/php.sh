# php: php-cli with its default extensions (json, pcre, hash, ctype, date...).
# shellcheck shell=bash disable=SC2154
prep_php() { need php php-cli || prep_skip "$skip_reason"; }
work_php() { sprun php php -d memory_limit=-1 "$W/heap.php"; }
