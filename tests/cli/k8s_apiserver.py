"""k8s_apiserver.py - a stand-in Kubernetes API server for kubectl's client-side checks.

usage: k8s_apiserver.py SWAGGER_JSON VERSION PORT_FILE LOG_FILE
Serves, on 127.0.0.1 at a free port (written to PORT_FILE once it listens), what
`kubectl apply --dry-run=client --validate=strict` reads from a server of Kubernetes
VERSION (v1.32.0): /version, discovery (/api, /apis, each group version's resources,
all derived from the paths of SWAGGER_JSON, the real OpenAPI v2 document of that
release, api/openapi-spec/swagger.json), and /openapi/v2, that document's definitions
unchanged, in the protobuf form kubectl asks for (gnostic's openapi_v2.Document). Any
object asked for does not exist (404), so apply would create it.

It leaves out two things on purpose, so that kubectl validates on its side: the
document's paths (kubectl looks there for the fieldValidation parameter of a PATCH,
and where it finds one it leaves the checking to the server, which a client dry run
never reaches) and /openapi/v3 (404, for the same reason). kubectl then validates as
it does against a server before 1.25: every object against the definitions, unknown
fields, wrong types and missing required fields are errors.

Every request is appended to LOG_FILE ("METHOD PATH"); anything but GET is refused
(405): a client dry run must send nothing. A schema keyword this encoder does not
know stops it at start (exit 1): nothing of the schema is dropped unsaid."""
import http.server
import json
import os
import re
import struct
import sys
import threading

# ---- protobuf wire format, for gnostic's OpenAPIv2.proto -------------------


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(num, data):  # length-delimited: strings and messages
    return varint(num << 3 | 2) + varint(len(data)) + data


def field_str(num, s):
    return field_bytes(num, s.encode())


def field_varint(num, n):
    return varint(num << 3 | 0) + varint(n & 0xFFFFFFFFFFFFFFFF)


def field_double(num, x):
    return varint(num << 3 | 1) + struct.pack("<d", x)


def any_yaml(value):
    """openapi_v2.Any{yaml}: JSON text, which YAML reads as it is."""
    return field_str(2, json.dumps(value))


def named_any(name, value):
    return field_str(1, name) + field_bytes(2, any_yaml(value))


# Schema fields by JSON keyword: (field number, how to encode the value).
SCHEMA_STR = {"$ref": 1, "format": 2, "title": 3, "description": 4, "pattern": 13,
              "discriminator": 26}
SCHEMA_DOUBLE = {"multipleOf": 6, "maximum": 7, "minimum": 9}
SCHEMA_BOOL = {"exclusiveMaximum": 8, "exclusiveMinimum": 10, "uniqueItems": 16,
               "readOnly": 27}
SCHEMA_INT = {"maxLength": 11, "minLength": 12, "maxItems": 14, "minItems": 15,
              "maxProperties": 17, "minProperties": 18}


def schema(s, where):
    """openapi_v2.Schema from a JSON schema object."""
    out = bytearray()
    for key, v in s.items():
        at = where + "." + key
        if key in SCHEMA_STR:
            out += field_str(SCHEMA_STR[key], v)
        elif key in SCHEMA_DOUBLE:
            out += field_double(SCHEMA_DOUBLE[key], float(v))
        elif key in SCHEMA_BOOL:
            out += field_varint(SCHEMA_BOOL[key], 1 if v else 0)
        elif key in SCHEMA_INT:
            out += field_varint(SCHEMA_INT[key], int(v))
        elif key == "default":
            out += field_bytes(5, any_yaml(v))
        elif key == "example":
            out += field_bytes(30, any_yaml(v))
        elif key == "required":
            for name in v:
                out += field_str(19, name)
        elif key == "enum":
            for e in v:
                out += field_bytes(20, any_yaml(e))
        elif key == "additionalProperties":  # AdditionalPropertiesItem
            if isinstance(v, bool):
                out += field_bytes(21, field_varint(2, 1 if v else 0))
            else:
                out += field_bytes(21, field_bytes(1, schema(v, at)))
        elif key == "type":  # TypeItem
            types = v if isinstance(v, list) else [v]
            out += field_bytes(22, b"".join(field_str(1, t) for t in types))
        elif key == "items":  # ItemsItem
            items = v if isinstance(v, list) else [v]
            out += field_bytes(23, b"".join(field_bytes(1, schema(i, at)) for i in items))
        elif key == "allOf":
            for i, sub in enumerate(v):
                out += field_bytes(24, schema(sub, "%s[%d]" % (at, i)))
        elif key == "properties":  # Properties of NamedSchema
            props = b"".join(field_bytes(1, field_str(1, name) + field_bytes(2, schema(p, at + "." + name)))
                             for name, p in v.items())
            out += field_bytes(25, props)
        elif key.startswith("x-"):
            out += field_bytes(31, named_any(key, v))
        else:
            raise ValueError("%s: schema keyword %r has no encoding here" % (at, key))
    return bytes(out)


def document(spec):
    """openapi_v2.Document: swagger, info and the definitions (no paths: see above)."""
    info = spec.get("info", {})
    out = field_str(1, spec.get("swagger", "2.0"))
    out += field_bytes(2, field_str(1, info.get("title", "")) + field_str(2, info.get("version", "")))
    defs = b"".join(field_bytes(1, field_str(1, name) + field_bytes(2, schema(s, name)))
                    for name, s in spec["definitions"].items())
    return out + field_bytes(9, defs)


# ---- discovery, from the document's paths ----------------------------------

COLLECTION = re.compile(r"^/(?:api/(?P<cv>v[^/]+)|apis/(?P<g>[^/]+)/(?P<gv>v[^/]+))/"
                        r"(?P<ns>namespaces/\{namespace\}/)?(?P<res>[a-z0-9.-]+)(?P<item>/\{name\})?$")
VERBS = {"get": "get", "list": "list", "post": "create", "put": "update", "patch": "patch",
         "delete": "delete", "deletecollection": "deletecollection"}


def version_rank(v):
    """Kubernetes' order of versions: GA, then beta, then alpha; higher first."""
    m = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", v)
    if not m:
        return (3, 0, 0, v)
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (stage, -int(m.group(1)), -int(m.group(3) or 0), v)


def discovery(spec):
    """{(group, version): {resource: {kind, namespaced, verbs}}}"""
    found = {}
    for path, item in spec.get("paths", {}).items():
        m = COLLECTION.match(path)
        if not m:
            continue
        gv = ("", m.group("cv")) if m.group("cv") else (m.group("g"), m.group("gv"))
        for method, op in item.items():
            if not isinstance(op, dict) or "x-kubernetes-group-version-kind" not in op:
                continue
            kind = op["x-kubernetes-group-version-kind"]["kind"]
            r = found.setdefault(gv, {}).setdefault(m.group("res"), {"kind": kind, "namespaced": False,
                                                                     "verbs": set()})
            r["namespaced"] = r["namespaced"] or bool(m.group("ns"))
            action = op.get("x-kubernetes-action", method)
            if action in VERBS:
                r["verbs"].add(VERBS[action])
    return found


def resource_list(gv, resources):
    group, version = gv
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": group + "/" + version if group else version,
            "resources": [{"name": name, "singularName": r["kind"].lower(), "namespaced": r["namespaced"],
                           "kind": r["kind"], "verbs": sorted(r["verbs"])}
                          for name, r in sorted(resources.items())]}


def group_list(found):
    groups = {}
    for group, version in found:
        if group:
            groups.setdefault(group, []).append(version)
    out = []
    for group, versions in sorted(groups.items()):
        versions.sort(key=version_rank)
        entries = [{"groupVersion": group + "/" + v, "version": v} for v in versions]
        out.append({"name": group, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}


# ---- the server -------------------------------------------------------------

def main():
    if len(sys.argv) != 5:
        sys.exit("usage: k8s_apiserver.py SWAGGER_JSON VERSION PORT_FILE LOG_FILE")
    swagger, version, port_file, log_file = sys.argv[1:]
    m = re.match(r"^v(\d+)\.(\d+)\.\d+$", version)
    if not m:
        sys.exit("k8s_apiserver.py: VERSION is vMAJOR.MINOR.PATCH, not %r" % version)
    with open(swagger) as f:
        spec = json.load(f)
    if not isinstance(spec, dict) or "definitions" not in spec or "paths" not in spec:
        sys.exit("k8s_apiserver.py: %s has no definitions or paths: not an OpenAPI v2 document" % swagger)
    try:
        v2 = document(spec)
    except ValueError as e:
        sys.exit("k8s_apiserver.py: %s" % e)
    found = discovery(spec)
    if ("", "v1") not in found:
        sys.exit("k8s_apiserver.py: %s has no core v1 paths: not a Kubernetes document" % swagger)
    replies = {
        "/version": {"major": m.group(1), "minor": m.group(2), "gitVersion": version,
                     "platform": "linux/amd64"},
        "/api": {"kind": "APIVersions", "versions": ["v1"],
                 "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]},
        "/apis": group_list(found),
    }
    for (group, v), resources in found.items():
        replies["/apis/%s/%s" % (group, v) if group else "/api/" + v] = resource_list((group, v), resources)
    log_lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def note(self):
            with log_lock, open(log_file, "a") as f:
                f.write("%s %s\n" % (self.command, self.path))

        def reply(self, code, body, ctype="application/json"):
            if not isinstance(body, bytes):
                body = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def status(self, code, reason, message):
            self.reply(code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": message, "reason": reason, "code": code})

        def do_GET(self):
            self.note()
            path = self.path.split("?", 1)[0]
            if path == "/openapi/v2":
                self.reply(200, v2, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
            elif path in replies:
                self.reply(200, replies[path])
            else:
                self.status(404, "NotFound", "%s not found" % path)

        def refuse(self):
            self.note()
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.status(405, "MethodNotAllowed", "this stand-in server takes no writes")

        do_POST = do_PUT = do_PATCH = do_DELETE = refuse

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(port_file + ".new", "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(port_file + ".new", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
