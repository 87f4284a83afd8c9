# clang-build: as gcc-build (progs/gcc-build.sh), with clang.
# shellcheck shell=bash disable=SC2154
# shellcheck source=tests/compat/progs/gcc-build.sh
. "$here/progs/gcc-build.sh"
prep_clang_build() { build_prep clang clang; }
work_clang_build() { build_work clang; }
