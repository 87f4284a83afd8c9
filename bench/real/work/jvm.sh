# jvm: a GC-heavy Java program written here (bench/real/GcChurn.java, compiled with
# javac): a live set of 1M items of mixed sizes replaced at random, a hash map of 2M
# boxed keys read and rewritten, short-lived strings and trees; a 1.5 GiB heap with a
# 256 MiB young generation, the parallel collector on 2 threads.
# shellcheck shell=bash disable=SC2034,SC2154
title='JVM GC churn (bench/real/GcChurn.java), 1.5 GiB heap'
set=full
needs='java:default-jre-headless javac:default-jdk-headless'
metric='^jvm: ([0-9.]+) '
ignore=' per s$'
extras='live=^live ([0-9.]+) per s
maps=^maps ([0-9.]+) per s
temps=^temps ([0-9.]+) per s'
jvm_heap=${RB_JVM_HEAP:-1536m}
jvm_scale=${RB_JVM_SCALE:-1}

prepare() { # dir
	local d=$1
	rm -rf "$d/classes"
	mkdir -p "$d/classes"
	javac -d "$d/classes" "$real/GcChurn.java" >&2 || { echo "javac could not build bench/real/GcChurn.java"; return 1; }
}

run() { # dir
	# no hsperfdata file in /tmp: nothing outside the heap that differs between runs
	exec java -Xms"$jvm_heap" -Xmx"$jvm_heap" -Xmn256m -XX:+UseParallelGC -XX:ParallelGCThreads=2 \
		-XX:-UsePerfData -cp "$1/classes" GcChurn "$jvm_scale"
}
