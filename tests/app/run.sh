#!/usr/bin/env bash
# The real Souz app under Xvfb with trayer as the tray host and dunst as the notification
# server: a pending approval created through the API shows in the tray menu and choosing
# Approve decides it; a notification's Deny action decides another; a decision made elsewhere
# withdraws the notification. Also measures idle RSS/CPU and notification latency.
# Needs: xvfb xauth imagemagick trayer dbus-x11 dunst x11-utils xdotool libnotify-bin.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
app="$target/debug/souz-app"
shots="${SOUZ_SCREENSHOTS:+$root/docs/screenshots}"
work="$(mktemp -d)"
export SOUZ_HOME="$work/souz" HOME="$work/user" SOUZ_LOG="info"
mkdir -p "$SOUZ_HOME" "$HOME"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export SOUZ_PORT="$port"
display=":$((90 + RANDOM % 9))"
export DISPLAY="$display"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- app log"; tail -40 "$work/app.log" || true; exit 1; }

Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 & pids+=($!)
for _ in $(seq 50); do xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done

sed "s|CHOOSER|$here/choose-action|" "$here/dunstrc" > "$work/dunstrc"
cat > "$work/session.sh" <<SESSION
set -euo pipefail
dunst -config "$work/dunstrc" >"$work/dunst.log" 2>&1 &
trayer --edge top --align right --widthtype request --height 32 --tint 0x202830 --transparent true --alpha 0 --SetDockType true >/dev/null 2>&1 &
sleep 1
exec "$app" >"$work/app.log" 2>&1
SESSION
dbus-run-session -- bash "$work/session.sh" & pids+=($!)

for _ in $(seq 300); do [ -f "$SOUZ_HOME/daemon.json" ] && break; sleep 0.1; done
[ -f "$SOUZ_HOME/daemon.json" ] || fail "the app did not start its daemon"
token=$(cat "$SOUZ_HOME/token"); base="http://127.0.0.1:$port"
api() { curl -sf -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }
app_pid=$(python3 -c "import json;print(json.load(open('$SOUZ_HOME/daemon.json'))['pid'])")
echo "app pid $app_pid at $base"

ask() { # path -> prints the approval id
  local call; call=$(api -X POST "$base/v1/tool-calls" -d "{\"tool\":\"NewFile\",\"arguments\":{\"path\":\"$HOME/$1\",\"text\":\"x\"},\"wait_ms\":0}" | python3 -c 'import json,sys;print(json.load(sys.stdin)["id"])')
  for _ in $(seq 100); do
    local id; id=$(api "$base/v1/tool-calls/$call" | python3 -c 'import json,sys;print(json.load(sys.stdin).get("approval_id") or "")')
    [ -n "$id" ] && { echo "$id"; return; }; sleep 0.05
  done
  fail "no approval for $1"
}
status_of() { api "$base/v1/approvals/$1" | python3 -c 'import json,sys;d=json.load(sys.stdin);print(d["status"], (d.get("decision") or {}).get("via",""))'; }
wait_status() { for _ in $(seq 100); do [ "$(status_of "$1")" = "$2" ] && return 0; sleep 0.1; done; fail "approval $1 is $(status_of "$1"), expected $2"; }

# --- idle figures, window closed, nothing happening
sleep 5
ticks() { awk '{print $14+$15}' "/proc/$app_pid/stat"; }
t0=$(ticks); sleep 20; t1=$(ticks)
rss=$(awk '/VmRSS/{print $2}' "/proc/$app_pid/status")
echo "MEASURE idle RSS ${rss} KiB; CPU $(( (t1 - t0) * 10 )) ms over 20 s"

# --- the tray lists a pending approval; choosing Approve decides it
first=$(ask tray.txt)
sleep 1
tray=$(xdotool search --class trayer | head -1)
eval "$(xdotool getwindowgeometry --shell "$tray")"
xdotool mousemove $((X + WIDTH - 12)) $((Y + 14)) click 1
sleep 1
[ -n "$shots" ] && { mkdir -p "$shots"; import -window root "$shots/tray-menu.png"; }
xdotool key Down Down Return
wait_status "$first" "approved tray"
[ -f "$HOME/tray.txt" ] || fail "approving in the tray did not run the tool"
echo "PASS tray Approve"

# --- a notification per approval; its Deny action decides it (dunst's context menu)
second=$(ask notified.txt)
for _ in $(seq 50); do [ "$(dunstctl count displayed)" -ge 1 ] && break; sleep 0.1; done
[ "$(dunstctl count displayed)" -ge 1 ] || fail "no notification shown"
[ -n "$shots" ] && import -window root "$shots/notification.png"
SOUZ_CHOOSE=Deny dunstctl context
wait_status "$second" "denied notification"
echo "PASS notification Deny"

# --- a decision made elsewhere withdraws the notification
third=$(ask elsewhere.txt)
for _ in $(seq 50); do [ "$(dunstctl count displayed)" -ge 1 ] && break; sleep 0.1; done
api -X POST "$base/v1/approvals/$third/decision" -d '{"decision":"approve","via":"api"}' >/dev/null
for _ in $(seq 50); do [ "$(dunstctl count displayed)" -eq 0 ] && break; sleep 0.1; done
[ "$(dunstctl count displayed)" -eq 0 ] || fail "the notification stayed after the decision"
echo "PASS withdrawn"

# --- notification latency: approval.requested (created_at) to "approval notification posted"
python3 - "$SOUZ_HOME" "$second" <<'PY'
import json, sys, glob, datetime
home, approval = sys.argv[1], sys.argv[2]
def parse(text): return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
created = None
for path in glob.glob(home + "/logs/*.jsonl"):
    for line in open(path):
        entry = json.loads(line)
        fields = entry.get("fields", {})
        if fields.get("message") == "approval notification posted" and fields.get("approval_id") == approval:
            posted = parse(entry["timestamp"])
import urllib.request
PY
echo "all app checks passed"
