#!/usr/bin/env bash
# Prints, one per line and sorted, the Debian packages that hold the shared
# libraries BINARY links directly (its DT_NEEDED entries, as the loader
# resolves them here). Installing them, with their dependencies, is what the
# binary needs to start: the Dockerfile's slim `cpu` image is made this way.
# Fails, naming the library, if one is not found or belongs to no package.
#
#   scripts/runtime-packages.sh BINARY
set -euo pipefail

binary="${1:?usage: scripts/runtime-packages.sh BINARY}"
[[ -f "$binary" ]] || { echo "runtime-packages: no file $binary" >&2; exit 2; }
needed="$(readelf -d "$binary" 2> /dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' || true)"
[[ -n "$needed" ]] ||
  { echo "runtime-packages: $binary links no shared library (not a dynamic ELF file?)" >&2; exit 2; }
resolved="$(ldd "$binary")"

# owner PATH: the package that installed PATH, also where PATH reaches its
# file through symbolic links (alternatives) or the merged /usr.
owner() {
  local real candidate package
  real="$(readlink -f "$1")"
  for candidate in "$1" "$real" "/usr$1" "/usr$real" "${1#/usr}" "${real#/usr}"; do
    # "package: path", or "a, b: path" for a file two packages hold; not "diversion by ...".
    package="$(dpkg-query -S "$candidate" 2> /dev/null | grep -v '^diversion' | head -1 | cut -d: -f1 | cut -d, -f1)"
    if [[ -n "$package" ]]; then
      echo "$package"
      return 0
    fi
  done
  return 1
}

packages=()
for library in $needed; do
  path="$(awk -v name="$library" '$1 == name && $2 == "=>" {print $3}' <<< "$resolved")"
  [[ -n "$path" && "$path" != "not" ]] || { echo "runtime-packages: $library is not found (ldd $binary)" >&2; exit 1; }
  package="$(owner "$path")" ||
    { echo "runtime-packages: $library ($path) belongs to no Debian package" >&2; exit 1; }
  packages+=("$package")
done
printf '%s\n' "${packages[@]}" | sort -u
