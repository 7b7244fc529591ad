#!/usr/bin/env bash
# Schema-driven fuzzing: Schemathesis generates requests for every operation of the server's own
# /openapi.json and checks what comes back: no 5xx, every answer in the documented schema and
# content type, no request over 10 s. Starts the debug build in a scratch directory, with a user
# and a project made by the CLI, and stops it at the end.
#
#   tests/openapi/fuzz.sh [examples per operation, default 40]
#
# Needs the virtual environment: python3 -m venv tests/openapi/.venv &&
# tests/openapi/.venv/bin/pip install -r tests/openapi/requirements.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
examples="${1:-40}"
bin="$PWD/target/debug/tidings"
schemathesis="$PWD/tests/openapi/.venv/bin/schemathesis"
cargo build --quiet --bin tidings
dir="$(mktemp -d)"
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

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

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# Fuzzing is thousands of requests a minute: the request limit is raised so that they are
# served, not refused with 429. DNS goes to a loopback port nobody answers on, so that checking
# made-up addresses never reaches the internet; mail stays in the capture outbox (no relay).
# Passwords are hashed at bcrypt's lowest cost, so generated sign-ups and sign-ins stay quick.
TIDINGS_SERVER__PORT="$port" TIDINGS_LIMITS__REQUESTS_PER_MINUTE=10000000 TIDINGS_AUTH__BCRYPT_COST=4 \
  TIDINGS_DNS__NAMESERVERS='["127.0.0.1:9"]' TIDINGS_DNS__TIMEOUT_MS=100 \
  "$bin" serve 2>"$dir/server.log" &
server=$!
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.1
done

# The second user's session, for the account routes (and the project routes, with X-Project-Id).
curl -fsS -o /dev/null -c "$dir/cookies" -H 'Content-Type: application/json' \
  -d '{"email": "account@example.com", "password": "fuzz-password"}' "http://127.0.0.1:$port/auth/login"
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
  --max-examples "$examples" --request-timeout 10 --wait-for-schema 10 --seed 1 --no-color || status=$?
if [ "$status" != 0 ]; then
  echo "--- the server's log (last 50 lines)"
  tail -n 50 "$dir/server.log"
fi
exit "$status"
