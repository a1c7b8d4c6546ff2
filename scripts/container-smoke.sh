#!/usr/bin/env bash
# Runs a built Flint image and walks the README's tour against it: the health check (Docker's own
# HEALTHCHECK included), a client-credentials token, a Patient created, found by REST search and by
# GraphQL, a Bot deployed and executed, then a graceful stop (SIGTERM, exit code 0). The root file
# system is read-only, as hardened deployments run it: the server writes only to /data (a volume)
# and /tmp. CI runs it after building the image.
#
#   scripts/container-smoke.sh IMAGE                  # embedded database in the container
#   DATABASE_URL=... REDIS_URL=... scripts/container-smoke.sh IMAGE
#                                                     # on the host's PostgreSQL and Redis (host network)
set -euo pipefail

IMAGE="${1:?usage: scripts/container-smoke.sh IMAGE}"
NAME="flint-smoke-$$"
PORT="${SMOKE_PORT:-18080}"
SECRET="smoke-$RANDOM$RANDOM"
BASE="http://127.0.0.1:$PORT"

run_args=(--detach --name "$NAME" --read-only --tmpfs /tmp -e SUPER_ADMIN_CLIENT_ID=admin-cli -e "SUPER_ADMIN_CLIENT_SECRET=$SECRET")
if [ -n "${DATABASE_URL:-}" ]; then
  run_args+=(--network host -e "PORT=$PORT" -e "DATABASE_URL=$DATABASE_URL" -e "BASE_URL=$BASE/")
  [ -n "${REDIS_URL:-}" ] && run_args+=(-e "REDIS_URL=$REDIS_URL")
else
  run_args+=(--publish "127.0.0.1:$PORT:8080" -e "BASE_URL=$BASE/")
fi

fail() {
  echo "container smoke test failed: $*" >&2
  docker logs --tail 30 "$NAME" >&2 || true
  exit 1
}
trap 'docker rm -f "$NAME" >/dev/null 2>&1 || true' EXIT

docker run "${run_args[@]}" "$IMAGE" >/dev/null
for _ in $(seq 1 90); do
  curl -sf -o /dev/null "$BASE/healthcheck" && break
  sleep 2
done
curl -sf -o /dev/null "$BASE/healthcheck" || fail "/healthcheck never answered 200"
echo "server up: $(curl -s "$BASE/healthcheck")"

TOKEN="$(curl -sf -X POST "$BASE/oauth2/token" -d grant_type=client_credentials \
  -d client_id=admin-cli -d "client_secret=$SECRET" | sed 's/.*"access_token":"\([^"]*\)".*/\1/')"
[ -n "$TOKEN" ] || fail "no token for the super-admin client"

family="Smoke$RANDOM"
created="$(curl -s -D - -o /dev/null -X POST "$BASE/fhir/R4/Patient" \
  -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/fhir+json' \
  -d "{\"resourceType\":\"Patient\",\"name\":[{\"family\":\"$family\"}],\"gender\":\"male\"}")"
echo "$created" | head -n 1 | grep -q ' 201' || fail "create Patient answered: $(echo "$created" | head -n 1)"
id="$(echo "$created" | tr -d '\r' | sed -n 's|^[Ll]ocation: .*/Patient/\([^/]*\)/_history/.*|\1|p')"
[ -n "$id" ] || fail "create Patient gave no Location"
curl -sf "$BASE/fhir/R4/Patient?name=$family" -H "Authorization: Bearer $TOKEN" \
  | grep -q "\"id\":\"$id\"" || fail "search by name did not find Patient/$id"
curl -sf -X POST "$BASE/graphql" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "{\"query\":\"{ PatientList(name: \\\"$family\\\") { id } }\"}" \
  | grep -q "\"id\":\"$id\"" || fail "GraphQL PatientList did not find Patient/$id"
echo "tour passed: token, create, search, GraphQL"

# Bots run in worker threads whose script is written at first use: the server's user must manage
# that although the application folder is not writable to it.
bot="$(curl -sf -X POST "$BASE/fhir/R4/Bot" -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/fhir+json' -d '{"resourceType":"Bot","name":"smoke"}' \
  | sed 's/.*"id":"\([^"]*\)".*/\1/')"
curl -sf -o /dev/null -X POST "$BASE/fhir/R4/Bot/$bot/\$deploy" -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' \
  -d '{"code":"exports.handler = async function (medplum, event) { return { echoed: event.input.word }; };"}' \
  || fail "Bot/\$deploy failed"
answer="$(curl -s -X POST "$BASE/fhir/R4/Bot/$bot/\$execute" -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' -d '{"word":"smoke"}')"
echo "$answer" | grep -q '"echoed":"smoke"' || fail "Bot/\$execute answered: $answer"
echo "bot passed: deploy, execute"

for _ in $(seq 1 45); do
  [ "$(docker inspect -f '{{.State.Health.Status}}' "$NAME")" = "healthy" ] && break
  sleep 2
done
[ "$(docker inspect -f '{{.State.Health.Status}}' "$NAME")" = "healthy" ] || fail "Docker's HEALTHCHECK never reported healthy"
echo "Docker health: healthy"

docker stop --time 15 "$NAME" >/dev/null
code="$(docker inspect -f '{{.State.ExitCode}}' "$NAME")"
[ "$code" = "0" ] || fail "the server exited with $code on SIGTERM"
echo "stopped on SIGTERM with exit code 0"
