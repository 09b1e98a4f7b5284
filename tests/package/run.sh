#!/usr/bin/env bash
# The Linux package, installed: bundles the suite's debug build into a .deb
# (`scripts/release-linux.sh --debug`, no rebuild), installs it with dpkg into a clean root (a
# fresh, empty dpkg database; this machine's libraries stand in for the package's
# dependencies), and checks what a person gets:
# the app and the `souz` CLI side by side in /usr/bin (the app runs the CLI found next to
# itself as its Landlock helper, and Claude Desktop runs it as the stdio bridge), both
# executable and running, the desktop entry and icon, and the package's declared dependencies.
# Removing the package leaves neither binary behind.
set -euo pipefail
cd "$(dirname "$0")/../.."

fail() { echo "package test: $*" >&2; exit 1; }

root="$(mktemp -d)"
log="$(mktemp)"
trap 'rm -rf "$root" "$log"' EXIT
scripts/release-linux.sh --debug > "$log" 2>&1 || { tail -n 40 "$log" >&2; fail "release-linux.sh --debug failed"; }
built="$(tail -n 1 "$log")"
deb="${built#built }"
[ -f "$deb" ] || fail "no package: $built"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/tmp"
: > "$root/var/lib/dpkg/status"
: > "$root/var/lib/dpkg/available"
# --force-depends: the clean root has none of the libraries the package depends on (this
# machine's stand in); --force-script-chrootless: the root has no shell to chroot into.
installed="$(dpkg --root="$root" --force-depends --force-script-chrootless --log=/dev/null -i "$deb" 2>&1)" \
  || fail "dpkg could not install $deb: $installed"

package="$(dpkg-deb -f "$deb" Package)"
listed="$(dpkg --root="$root" -L "$package")"
for binary in /usr/bin/souz-app /usr/bin/souz; do
  grep -qx "$binary" <<<"$listed" || fail "$binary is not in the package: $listed"
  [ -x "$root$binary" ] || fail "$binary is not installed as an executable"
done
[ "$(dirname "$(readlink -f "$root/usr/bin/souz")")" = "$(dirname "$(readlink -f "$root/usr/bin/souz-app")")" ] \
  || fail "souz is not next to souz-app"

# The CLI runs from the package and is the build's own.
version="$("$root/usr/bin/souz" --version)" || fail "the packaged souz does not run"
want="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
grep -q "$want" <<<"$version" || fail "packaged souz says '$version', the workspace is $want"
cmp -s "$root/usr/bin/souz" "${CARGO_TARGET_DIR:-target}/debug/souz" \
  || fail "the packaged souz is not the one just built"

# The desktop entry starts the app; its icon is there.
entry="$(grep -l '^Exec=souz-app' "$root"/usr/share/applications/*.desktop 2>/dev/null | head -n 1)"
[ -n "$entry" ] || fail "no desktop entry runs souz-app"
grep -q '^Name=Souz$' "$entry" || fail "the desktop entry is not named Souz: $(cat "$entry")"
ls "$root"/usr/share/icons/hicolor/*/apps/souz-app.png >/dev/null 2>&1 || fail "no app icon"

# What the package asks of the system: the WebKitGTK the window needs.
depends="$(dpkg-deb -f "$deb" Depends)"
grep -q 'libwebkit2gtk-4.1' <<<"$depends" || fail "Depends lacks WebKitGTK: $depends"

removed="$(dpkg --root="$root" --force-depends --force-script-chrootless --log=/dev/null -r "$package" 2>&1)" \
  || fail "dpkg could not remove $package: $removed"
[ ! -e "$root/usr/bin/souz" ] && [ ! -e "$root/usr/bin/souz-app" ] || fail "binaries left after removal"

echo "package test: $deb installs souz-app and souz side by side in /usr/bin ($version); removal leaves neither"
