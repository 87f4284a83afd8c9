#!/usr/bin/env bash
# test_k8s.sh - the Kubernetes manifests of deploy/k8s pass `kubectl apply
# --dry-run=client --validate=strict` against the real OpenAPI schema of the Kubernetes
# release kubectl speaks, and manifests made wrong from them (a field of the wrong
# type, an unknown field, a required field missing) fail it, each naming the field.
# kubectl reads the schema from a server: tests/cli/k8s_apiserver.py stands in for one,
# serving the release's own api/openapi-spec/swagger.json (its docstring says what it
# leaves out so that kubectl validates on its side).
#
# The document is not in this repository: SUPERPAGE_K8S_SPEC names it, either a
# swagger.json of kubectl's release, or a git directory of kubernetes/kubernetes (the
# newest v1.MINOR.N tag's api/openapi-spec/swagger.json) or of
# kubernetes-sigs/reference-docs (gen-apidocs/config/v1_MINOR/swagger.json, the same
# file copied per release). Without it, or without kubectl, the test says SKIP: CI
# has neither the document nor a way to fetch it.
# Usage: tests/cli/test_k8s.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why"; needs no root, changes nothing outside its temporary directory.
set -u
B=${1:?usage: tests/cli/test_k8s.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"
: "$B" # the test needs no build: only kubectl, python3 and the document
stub_pid=''
cleanup() {
	[ -n "$stub_pid" ] && kill "$stub_pid" 2>/dev/null && wait "$stub_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

if ! command -v kubectl >/dev/null 2>&1; then
	skip k8s "no kubectl"
	exit 0
fi
if [ -z "$PY" ]; then
	skip k8s "no python3 for the stand-in API server"
	exit 0
fi
# Its own files only: the discovery and HTTP caches, the kubeconfig.
export HOME=$tmp/home KUBECONFIG=$tmp/kubeconfig
mkdir -p "$HOME"

# kubectl's minor version (a dispatcher that runs the kubectl of the server's
# release says "32+"): the document must be of that release.
minor=$(kubectl version --client -o json 2>/dev/null |
	"$PY" -c 'import json, sys; print(int("".join(c for c in json.load(sys.stdin)["clientVersion"]["minor"] if c.isdigit())))' 2>/dev/null)
if [ -z "$minor" ]; then
	fail k8s "kubectl version --client -o json gave no minor version: $(kubectl version --client 2>&1 | head -c 200)"
	exit 1
fi
if [ "$minor" -lt 25 ]; then
	skip k8s "kubectl 1.$minor has no --validate=strict (1.25 or later has)"
	exit 0
fi
release=v1.$minor.0
spec=${SUPERPAGE_K8S_SPEC:-}
if [ -z "$spec" ]; then
	skip k8s "no Kubernetes OpenAPI document: SUPERPAGE_K8S_SPEC is unset (this script's header says what it takes)"
	exit 0
elif [ -f "$spec" ]; then
	cp "$spec" "$tmp/swagger.json"
elif git -C "$spec" cat-file -e "HEAD:gen-apidocs/config/v1_$minor/swagger.json" 2>/dev/null; then
	git -C "$spec" show "HEAD:gen-apidocs/config/v1_$minor/swagger.json" >"$tmp/swagger.json"
else
	tag=$(git -C "$spec" tag -l "v1.$minor.*" 2>/dev/null | grep -E '^v1\.[0-9]+\.[0-9]+$' | sort -V | tail -n 1)
	if [ -z "$tag" ] || ! git -C "$spec" show "$tag:api/openapi-spec/swagger.json" >"$tmp/swagger.json" 2>/dev/null; then
		skip k8s "$spec has no OpenAPI document of Kubernetes 1.$minor (kubectl's release)"
		exit 0
	fi
	release=$tag
fi

# The stand-in server: it says where it listens once it does, or dies saying why.
"$PY" "$here/k8s_apiserver.py" "$tmp/swagger.json" "$release" "$tmp/port" "$tmp/requests" \
	2>"$tmp/stub.err" &
stub_pid=$!
for _ in $(seq 300); do
	[ -s "$tmp/port" ] && break
	kill -0 "$stub_pid" 2>/dev/null || break
	sleep 0.1
done
if [ ! -s "$tmp/port" ]; then
	fail k8s_stub "the stand-in API server did not start: $(oneline "$tmp/stub.err" 5)"
	exit 1
fi
cat >"$KUBECONFIG" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: stub, cluster: {server: "http://127.0.0.1:$(cat "$tmp/port")"}}]
users: [{name: nobody, user: {}}]
contexts: [{name: stub, context: {cluster: stub, user: nobody, namespace: default}}]
current-context: stub
EOF

dry_apply() { # file: leaves rc, $tmp/out, $tmp/err
	timeout -k 5 120 kubectl apply --dry-run=client --validate=strict -f "$1" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# Each manifest as it is: valid, and kubectl would create its object.
manifests=("$top"/deploy/k8s/*.yaml)
for m in "${manifests[@]}"; do
	name=k8s_valid_$(basename "$m" .yaml)
	dry_apply "$m"
	if [ "$rc" != 0 ]; then
		fail "$name" "kubectl apply --dry-run=client --validate=strict exited $rc: $(oneline "$tmp/err")"
	elif ! grep -q 'created (dry run)$' "$tmp/out"; then
		fail "$name" "kubectl did not say it would create the object: $(oneline "$tmp/out")"
	else
		pass "$name" "$(head -n 1 "$tmp/out")"
	fi
done

# The same manifests made wrong in one place: kubectl must refuse each, naming the
# field, or the schema was not what it checked against.
broken() { # name manifest sed-expression what-the-error-says
	local name=$1 m=$top/deploy/k8s/$2 expr=$3 want=$4
	sed "$expr" "$m" >"$tmp/$name.yaml"
	if cmp -s "$m" "$tmp/$name.yaml"; then
		fail "$name" "'$expr' changed nothing in $2: the test is out of date"
		return
	fi
	dry_apply "$tmp/$name.yaml"
	if [ "$rc" = 0 ]; then
		fail "$name" "kubectl accepted $2 with '$expr': $(oneline "$tmp/out")"
	elif ! grep -qF "$want" "$tmp/err"; then
		fail "$name" "kubectl refused $2 with '$expr' but without '$want': $(oneline "$tmp/err")"
	else
		pass "$name"
	fi
}
broken k8s_rejects_wrong_type daemonset.yaml 's/containerPort: 9465/containerPort: "9465"/' \
	'invalid type for io.k8s.api.core.v1.ContainerPort.containerPort: got "string", expected "integer"'
broken k8s_rejects_wrong_type_bool daemonset.yaml 's/hostPID: true/hostPID: "yes"/' \
	'invalid type for io.k8s.api.core.v1.PodSpec.hostPID: got "string", expected "boolean"'
broken k8s_rejects_unknown_field pod-example.yaml 's/^\(  *\)image: /\1imag: /' \
	'unknown field "imag" in io.k8s.api.core.v1.Container'
broken k8s_rejects_missing_field pod-example.yaml 's/- name: app$/- image2: app/' \
	'missing required field "name" in io.k8s.api.core.v1.Container'

# kubectl read the schema from the stand-in, and a client dry run wrote nothing.
name=k8s_schema_read
if ! grep -q '^GET /openapi/v2' "$tmp/requests"; then
	fail $name "kubectl never asked for /openapi/v2: $(oneline "$tmp/requests" 5)"
elif grep -v '^GET ' "$tmp/requests" | grep -q .; then
	fail $name "kubectl sent more than GETs: $(grep -v '^GET ' "$tmp/requests" | head -n 3 | tr '\n' ' ')"
else
	pass $name "$(grep -c . "$tmp/requests") GETs, schema of Kubernetes $release"
fi
exit 0
