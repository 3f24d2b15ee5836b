#!/bin/sh
# Installs crabup from crabtalk's releases (RFC 0016), for a machine with
# no Rust and no checkout:
#
#   curl -fsSL https://github.com/crabtalk/crabtalk/releases/latest/download/crabup-installer.sh | sh
#
# It downloads crabup-<target>.tar.xz for this machine and its .sha256,
# checks the SHA-256 before anything is put in place, and moves crabup into
# $CARGO_HOME/bin (default ~/.cargo/bin), where crabup installs the rest.
# Then: `crabup up`, or `crabup pull daemon`.
#
# CRABUP_VERSION=0.1.0 picks a release (default: the latest);
# CRABUP_DIST_SERVER=<url> another release server, serving
# <url>/v<version>/<file> (then CRABUP_VERSION is needed).
set -eu

repository="https://github.com/crabtalk/crabtalk"
version="${CRABUP_VERSION:-}"
version="${version#v}"

say() { printf 'crabup-installer: %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }

if [ -n "${CRABUP_DIST_SERVER:-}" ]; then
    [ -n "$version" ] || fail "CRABUP_DIST_SERVER is set: say which release with CRABUP_VERSION=<version>"
    base="${CRABUP_DIST_SERVER%/}/v$version"
elif [ -n "$version" ]; then
    base="$repository/releases/download/v$version"
else
    base="$repository/releases/latest/download"
fi

case "$(uname -m)" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) fail "no prebuilt crabup for $(uname -m); build it from a checkout: cargo install --path crabup" ;;
esac
case "$(uname -s)" in
    Linux) target="$arch-unknown-linux-gnu" ;;
    Darwin) target="$arch-apple-darwin" ;;
    *) fail "no prebuilt crabup for $(uname -s) here; on Windows download crabup-x86_64-pc-windows-msvc.tar.xz from $repository/releases" ;;
esac

if command -v curl > /dev/null 2>&1; then
    fetch() { curl --proto '=https,http' -fsSL --connect-timeout 15 --max-time 600 -o "$2" "$1"; }
elif command -v wget > /dev/null 2>&1; then
    fetch() { wget -q -T 30 -O "$2" "$1"; }
else
    fail "neither curl nor wget is installed"
fi
if command -v sha256sum > /dev/null 2>&1; then
    digest() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum > /dev/null 2>&1; then
    digest() { shasum -a 256 "$1" | cut -d' ' -f1; }
else
    fail "neither sha256sum nor shasum is installed: the download cannot be checked"
fi

archive="crabup-$target.tar.xz"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT INT TERM

say "downloading $base/$archive"
fetch "$base/$archive.sha256" "$tmp/$archive.sha256" || fail "cannot download $base/$archive.sha256"
fetch "$base/$archive" "$tmp/$archive" || fail "cannot download $base/$archive"
want="$(cut -d' ' -f1 < "$tmp/$archive.sha256" | head -n1)"
got="$(digest "$tmp/$archive")"
[ "${#want}" -eq 64 ] || fail "$archive.sha256 holds no SHA-256"
[ "$got" = "$want" ] || fail "checksum mismatch: $archive has SHA-256 $got, the release says $want; nothing was installed"

tar -xJf "$tmp/$archive" -C "$tmp" "crabup-$target/crabup" || fail "$archive holds no crabup-$target/crabup"
bin="${CARGO_HOME:-$HOME/.cargo}/bin"
mkdir -p "$bin"
# Beside its place first, then renamed over it: never a half-written crabup.
cp "$tmp/crabup-$target/crabup" "$bin/.crabup.installing"
chmod 755 "$bin/.crabup.installing"
"$bin/.crabup.installing" --version > /dev/null 2>&1 || {
    rm -f "$bin/.crabup.installing"
    fail "the downloaded crabup does not run on this machine; build it from a checkout: cargo install --path crabup"
}
mv -f "$bin/.crabup.installing" "$bin/crabup"
say "installed $("$bin/crabup" --version) in $bin (sha256 of $archive verified)"
case ":$PATH:" in
    *":$bin:"*) ;;
    *) say "$bin is not on PATH; add to your shell's profile: export PATH=\"$bin:\$PATH\"" ;;
esac
say "next: crabup up    (installs and starts the daemon and components; crabup pull <name> for one)"
