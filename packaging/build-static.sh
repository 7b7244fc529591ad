#!/usr/bin/env bash
# Builds a statically linked release binary of tidings for x86_64 Linux (glibc, crt-static).
#
#   bash packaging/build-static.sh    # -> ${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-gnu/release/tidings
#
# Everything is Rust or bundled C (SQLite), TLS is rustls, so no system library is needed at run
# time. glibc's static getaddrinfo still reads /etc/nsswitch.conf and /etc/hosts; the DNS
# lookups of domain checks go through hickory and do not depend on it.
set -euo pipefail
cd "$(dirname "$0")/.."
target=x86_64-unknown-linux-gnu
RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" cargo build --release --locked --target "$target"
bin="${CARGO_TARGET_DIR:-target}/$target/release/tidings"
echo "built $bin ($(du -h "$bin" | cut -f1))"
if ldd "$bin" 2>&1 | grep -Eq 'statically linked|not a dynamic executable'; then
  echo "ldd: $(ldd "$bin" 2>&1 | head -n 1 | sed 's/^[[:space:]]*//')"
else
  echo "error: $bin is dynamically linked:" >&2
  ldd "$bin" >&2
  exit 1
fi
"$bin" --version
