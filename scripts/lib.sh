# Shared helpers for the test scripts: source it, don't run it.

# Installs the Debian packages that are missing, quietly; `apt-get update`
# runs only when something must be installed.
need_apt() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing from apt: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# Prints a section title.
step() {
  printf '\n==> %s\n' "$*"
}
