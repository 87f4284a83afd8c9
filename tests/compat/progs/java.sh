# java: an allocation-heavy program compiled with javac, in a 768 MiB-1 GiB heap.
# shellcheck shell=bash disable=SC2154
prep_java() {
	need java default-jre-headless || prep_skip "$skip_reason"
	need javac default-jdk-headless || prep_skip "$skip_reason"
	mkdir -p classes
	timeout 300 javac -d classes "$W/Alloc.java"
}
work_java() {
	PROMOTE_AT=2 sprun java java -Xms768m -Xmx1g -XX:+UseParallelGC -XX:ParallelGCThreads=2 \
		-cp "$pdir/classes" Alloc
}
