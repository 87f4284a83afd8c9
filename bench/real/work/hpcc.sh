# hpcc: HPC Challenge (Debian's hpcc), one process, a modest N: HPL, PTRANS,
# RandomAccess, STREAM and FFT; judged by HPL, the others' medians beside it. Its
# result file is its stdout (hpccoutf.txt is a link to it); HPL's residual check must
# say PASSED in every run.
# shellcheck shell=bash disable=SC2034,SC2154
title='hpcc (HPL, PTRANS, RandomAccess, STREAM, FFT), N=2000'
set=quick
needs='hpcc:hpcc'
metric='^HPL_Tflops=([0-9.e+-]+)'
ignore='.'
expect='Ax-b.*PASSED'
extras='PTRANS GB/s=^PTRANS_GBs=([0-9.e+-]+)
SingleRandomAccess GUP/s=^SingleRandomAccess_GUPs=([0-9.e+-]+)
SingleSTREAM Triad GB/s=^SingleSTREAM_Triad=([0-9.e+-]+)
SingleFFT Gflop/s=^SingleFFT_Gflops=([0-9.e+-]+)'
hpcc_n=${RB_HPCC_N:-2000}

prepare() { # dir
	local d=$1 ex=/usr/share/doc/hpcc/examples/_hpccinf.txt
	[ -r "$ex" ] || { echo "no $ex to start hpccinf.txt from"; return 1; }
	# one problem size, one process (P = Q = 1); the rest as Debian's example has it
	sed -e "6s/^[0-9]* /$hpcc_n /" -e '11s/^[0-9]* /1 /' -e '12s/^[0-9]* /1 /' "$ex" >"$d/hpccinf.txt"
	rm -f "$d/hpccoutf.txt"
	ln -s /dev/stdout "$d/hpccoutf.txt"
}

run() { # dir
	cd "$1" || exit 1
	# Open MPI's singleton refuses root without these
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	exec hpcc
}
