#!/usr/bin/env bash
# with-postgres.sh CMD...: run CMD with STORMSIM_POSTGRES_DSN naming a
# throwaway PostgreSQL cluster, started for it and removed after it.
#
# The cluster lives in a temporary directory, listens on 127.0.0.1 on a free
# port (and a socket in that directory), trusts local connections, and is
# stopped and deleted when CMD ends, however it ends. PostgreSQL refuses to
# run as root, so as root the server runs as the postgres user (runuser).
# Installs Debian's postgresql when no server is found and apt-get can.
set -euo pipefail

find_bin() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

bin=$(find_bin || true)
if [ -z "$bin" ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "with-postgres: installing postgresql" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) >&2
  bin=$(find_bin || true)
fi
if [ -z "$bin" ]; then
  echo "with-postgres: no PostgreSQL server (initdb) found" >&2
  exit 1
fi

as_pg=()
if [ "$(id -u)" = 0 ]; then
  as_pg=(runuser -u postgres --)
fi

dir=$(mktemp -d /tmp/stormsim-pg.XXXXXX)
chmod 755 "$dir"
[ "$(id -u)" = 0 ] && chown postgres: "$dir"
cleanup() {
  "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

port=
for p in $(seq 54329 54429); do
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || { echo "with-postgres: no free port in 54329..54429" >&2; exit 1; }

"${as_pg[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
"${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=200" start >/dev/null \
  || { cat "$dir/server.log" >&2; exit 1; }

export STORMSIM_POSTGRES_DSN="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
echo "with-postgres: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" >&2
"$@"
