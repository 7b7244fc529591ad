#!/usr/bin/env bash
# Schema-driven fuzzing: Schemathesis generates requests for every operation of the server's own
# /openapi.json and checks what comes back: no 5xx, every answer in the documented schema and
# content type, no request over 10 s. Starts the debug build in a scratch directory, with a user
# and a project made by the CLI, and stops it at the end.
#
#   [SEED=n] [CHECKS=...] tests/openapi/fuzz.sh [examples per operation, default 40]
#
# Needs the virtual environment: python3 -m venv tests/openapi/.venv &&
# tests/openapi/.venv/bin/pip install -r tests/openapi/requirements.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
# Where the system allows it, the whole run is in a network namespace of its own with loopback
# only: whatever a generated request makes the server do (a workflow's WEBHOOK step to a made-up
# address, say), it cannot reach beyond this machine.
# (It takes root: in a user namespace dnsmasq cannot set its groups and does not start.)
if [ -z "${FUZZ_ISOLATED:-}" ]; then
  if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && unshare -n true 2>/dev/null; then
    exec unshare -n env FUZZ_ISOLATED=1 bash -c 'ip link set lo up && exec bash "$0" "$@"' "$0" "$@"
  fi
  echo "note: no network namespace here (needs root and unshare -n); the fuzzed server keeps the host's network" >&2
fi
examples="${1:-40}"
bin="$PWD/target/debug/tidings"
schemathesis="$PWD/tests/openapi/.venv/bin/schemathesis"
cargo build --quiet --bin tidings
dir="$(mktemp -d)"
server=""
dns=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  [ -n "$dns" ] && kill "$dns" 2>/dev/null && wait "$dns" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The server's DNS: dnsmasq on loopback, with no upstream, so that a name it does not hold is
# refused at once and nothing reaches the internet. Restarted with the sender domain's records
# once the server has made them (arguments: --txt-record=...).
[ -x /usr/sbin/dnsmasq ] || { echo "fuzz.sh needs dnsmasq: apt-get install dnsmasq-base" >&2; exit 1; }
dns_port="$(free_port)"
start_dns() {
  [ -n "$dns" ] && kill "$dns" 2>/dev/null && wait "$dns" 2>/dev/null
  /usr/sbin/dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --pid-file= \
    --user="$(id -un)" --listen-address=127.0.0.1 --bind-interfaces --port="$dns_port" "$@" 2>>"$dir/dns.log" &
  dns=$!
  sleep 0.3
}
start_dns

cd "$dir"
"$bin" user create --email fuzz@example.com --password fuzz-password >/dev/null
project="$("$bin" project create --name Fuzz --owner fuzz@example.com)"
key() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])" <<<"$project"; }
export FUZZ_SECRET_KEY="$(key secretKey)" FUZZ_PUBLIC_KEY="$(key publicKey)"
# The account routes are fuzzed as a second user, with a project of its own: what the session
# does (disable, reset or delete a project, cap its sending) cannot reach the keyed project above.
"$bin" user create --email account@example.com --password fuzz-password >/dev/null
project="$("$bin" project create --name Account --owner account@example.com)"
export FUZZ_PROJECT_ID="$(key id)"

port="$(free_port)"
# Fuzzing is thousands of requests a minute: the request limit is raised so that they are
# served, not refused with 429. Mail stays in the capture outbox (no relay). Passwords are
# hashed at bcrypt's lowest cost, so generated sign-ups and sign-ins stay quick.
TIDINGS_SERVER__PORT="$port" TIDINGS_LIMITS__REQUESTS_PER_MINUTE=10000000 TIDINGS_AUTH__BCRYPT_COST=4 \
  TIDINGS_DNS__NAMESERVERS="[\"127.0.0.1:$dns_port\"]" TIDINGS_DNS__TIMEOUT_MS=1000 \
  "$bin" serve 2>"$dir/server.log" &
server=$!
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.1
done

# A verified sender domain, the one the document's examples send from (hello@acme.test), so
# that sends and templates get past the domain check: the server makes its records, dnsmasq
# serves them (a TXT value in strings of at most 255 characters), the server verifies them.
base="http://127.0.0.1:$port"
domain="$(curl -fsS -H "Authorization: Bearer $FUZZ_SECRET_KEY" -H 'Content-Type: application/json' \
  -d '{"domain": "acme.test"}' "$base/domains")"
mapfile -t records < <(python3 -c '
import json, sys
for r in json.load(sys.stdin)["records"]:
    chunks = [r["value"][i:i + 255] for i in range(0, len(r["value"]), 255)]
    print("--txt-record=" + ",".join([r["name"]] + chunks))' <<<"$domain")
start_dns "${records[@]}"
domain_id="$(python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])' <<<"$domain")"
verified="$(curl -fsS -H "Authorization: Bearer $FUZZ_SECRET_KEY" "$base/domains/$domain_id/verify")"
python3 -c 'import json, sys; d = json.load(sys.stdin); sys.exit(d["status"] != "verified" and f"acme.test is not verified: {d}")' <<<"$verified"

# One of each resource, for the operations that act on one (tests/openapi/schemathesis.toml
# hands their ids to those operations, except deletions: the rest of the run keeps them).
call() { curl -fsS -H "Authorization: Bearer $FUZZ_SECRET_KEY" -H 'Content-Type: application/json' "$@"; }
id_of() { python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'; }
export FUZZ_DOMAIN_ID="$domain_id"
export FUZZ_KEYED_PROJECT_ID="$(python3 -c 'import json, sys; print(json.load(sys.stdin)["projectId"])' <<<"$domain")"
export FUZZ_CONTACT_ID="$(call -d '{"email": "fixture@example.com", "subscribed": true, "data": {"plan": "pro"}}' \
  "$base/contacts" | id_of)"
call -d '{"email": "fixture@example.com", "event": "fixture-event", "data": {"step": 1}}' "$base/events/track" >/dev/null
export FUZZ_TEMPLATE_ID="$(call -d '{"name": "Fixture", "subject": "Hello {{ email }}", "body": "<p>Hi</p>",
  "from": "hello@acme.test"}' "$base/templates" | id_of)"
export FUZZ_SEGMENT_ID="$(call -d '{"name": "Fixture", "type": "STATIC"}' "$base/segments" | id_of)"
export FUZZ_CAMPAIGN_ID="$(call -d '{"name": "Fixture", "subject": "News", "body": "<p>News</p>",
  "from": "hello@acme.test", "audienceType": "ALL"}' "$base/campaigns" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["id"])')"
export FUZZ_WORKFLOW_ID="$(call -d '{"name": "Fixture"}' "$base/workflows" | id_of)"
export FUZZ_STEP_ID="$(call -d '{"type": "DELAY", "config": {"amount": 1, "unit": "minutes"}}' \
  "$base/workflows/$FUZZ_WORKFLOW_ID/steps" | id_of)"

for name in FUZZ_DOMAIN_ID FUZZ_KEYED_PROJECT_ID FUZZ_CONTACT_ID FUZZ_TEMPLATE_ID FUZZ_SEGMENT_ID \
  FUZZ_CAMPAIGN_ID FUZZ_WORKFLOW_ID FUZZ_STEP_ID; do
  [ -n "${!name}" ] || { echo "fixture $name was not made" >&2; exit 1; }
done

# The second user's session, for the account routes (and the project routes, with X-Project-Id).
curl -fsS -o /dev/null -c "$dir/cookies" -H 'Content-Type: application/json' \
  -d '{"email": "account@example.com", "password": "fuzz-password"}' "$base/auth/login"
FUZZ_SESSION="$(awk '$6 == "tidings_session" { print $7 }' "$dir/cookies")"
export FUZZ_SESSION

status=0
# Webhook endpoints are made and changed by their own tests (tests/integration/webhooks.rs, with
# a receiver on loopback): generated ones would have the server post events to whatever address
# the generator wrote, public ones included. Signing out would end the session the rest of the
# run uses.
"$schemathesis" --config-file "$OLDPWD/tests/openapi/schemathesis.toml" run "http://127.0.0.1:$port/openapi.json" \
  --checks "${CHECKS:-not_a_server_error,status_code_conformance,response_schema_conformance,content_type_conformance,ignored_auth}" \
  --exclude-operation-id createWebhook --exclude-operation-id updateWebhook --exclude-operation-id signOut \
  --max-examples "$examples" --request-timeout 10 --wait-for-schema 10 --seed "${SEED:-1}" --no-color || status=$?
# What the generated sends left in the capture outbox (the delivery path ran for them).
sleep 1
captured="$(curl -fsS -H "Authorization: Bearer $FUZZ_SECRET_KEY" "$base/outbox?limit=1" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["total"])' || echo "?")"
echo "messages sent from acme.test and captured: $captured"
if [ "$status" != 0 ]; then
  echo "--- the server's log (last 50 lines)"
  tail -n 50 "$dir/server.log"
fi
exit "$status"
