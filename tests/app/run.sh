#!/usr/bin/env bash
# The real Souz app under Xvfb with trayer as the tray host and dunst as the notification
# server: a pending approval created through the API shows in the tray menu and choosing
# Approve decides it; a notification's Deny action decides another; a decision made elsewhere
# withdraws the notification; a question asked by a real agent turn (AskUser, against the fake
# OpenAI server of tests/ui) is notified as "Souz asks", shows in the tray menu, and choosing one
# of its choices there answers it, withdraws the notification and lets the turn finish with that
# answer. A turn that changed files is notified with how many and an Undo action that puts
# them back byte for byte; with a file changed since, Undo refuses and opens the turn's
# conflicts on the History page. Start at login, toggled in the tray, writes the XDG autostart entry with the app's
# path; a restarted app reads it back into the tray; toggling again removes it. The tray follows
# the interface language chosen in Souz. `souz-app --show` opens the window at launch, and its
# page reaches the app's own commands (the first-paint report: the window's capability grants
# them to the daemon's origin). Also measures idle RSS/CPU, notification latency, the window's
# load and first paint, and the app's start to its window's first paint. The push-to-talk hotkey,
# pressed as a global shortcut, reaches the app and shows its window.
# Needs: xvfb xauth imagemagick trayer dbus-x11 dunst x11-utils xdotool libnotify-bin, node.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
app="${SOUZ_APP:-$target/debug/souz-app}"
shots="${SOUZ_SCREENSHOTS:+$root/docs/screenshots}"
work="$(mktemp -d)"
export SOUZ_HOME="$work/souz" HOME="$work/user" SOUZ_LOG="info,souz_app=debug" NO_AT_BRIDGE=1
# Tests never reach the internet: the default local memory model is not downloaded.
export SOUZ_NO_MODEL_DOWNLOADS=1
mkdir -p "$SOUZ_HOME" "$HOME"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export SOUZ_PORT="$port"
display=":$((90 + RANDOM % 9))"
export DISPLAY="$display"
pids=()
# Each helper runs in its own process group (setsid), so cleanup also ends what it started (the
# bus activates accessibility daemons that would otherwise outlive the test and hold its output).
cleanup() {
  rm -f "$work/keep-app"
  for pid in "${pids[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- app log"; tail -40 "$work/app.log" || true; exit 1; }

# The model: a fake OpenAI server scripted to ask a question, then to answer, then to change
# files in two turns. Turn-finished notifications are off until the undo checks turn them on,
# so that the only notifications on screen are the ones under test.
setsid node "$here/fake-provider.mjs" "$work/provider-url" "$work/provider-requests.json" >"$work/provider.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do [ -s "$work/provider-url" ] && break; sleep 0.1; done
[ -s "$work/provider-url" ] || { echo "FAIL: the fake provider did not start"; cat "$work/provider.log"; exit 1; }
cat > "$SOUZ_HOME/config.toml" <<CONFIG
[llm]
openai_base_url = "$(cat "$work/provider-url")/v1"

[agent]
default_agent = "skills"

[notifications]
turn_finished = false
CONFIG
export OPENAI_API_KEY="sk-app-test-key"

setsid Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 & pids+=($!)
for _ in $(seq 50); do xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done

# dunst runs its chooser with its own environment, so the test tells it what to pick through a
# file; dunstctl and the app share the session bus, whose address the session writes down.
export SOUZ_CHOICE_FILE="$work/choice" SOUZ_NOTIFICATION_LOG="$work/notifications"
echo Approve > "$SOUZ_CHOICE_FILE"
sed -e "s|CHOOSER|$here/choose-action|" -e "s|RECORDER|$here/record-notification|" "$here/dunstrc" > "$work/dunstrc"
cat > "$work/session.sh" <<SESSION
set -euo pipefail
echo "\$DBUS_SESSION_BUS_ADDRESS" > "$work/bus"
dunst -config "$work/dunstrc" >"$work/dunst.log" 2>&1 &
trayer --edge top --align right --widthtype request --height 32 --tint 0x202830 --transparent true --alpha 0 --SetDockType true >/dev/null 2>&1 &
sleep 1
# The app again whenever it ends while the test wants it (the restart check), on the same bus.
# Its arguments are read from a file at each start (the --show check).
while [ -e "$work/keep-app" ]; do "$app" \$(cat "$work/app-args" 2>/dev/null) >>"$work/app.log" 2>&1 || true; done
SESSION
touch "$work/keep-app"
setsid dbus-run-session -- bash "$work/session.sh" >"$work/session.log" 2>&1 & pids+=($!)

for _ in $(seq 300); do [ -f "$SOUZ_HOME/daemon.json" ] && break; sleep 0.1; done
[ -f "$SOUZ_HOME/daemon.json" ] || fail "the app did not start its daemon"
export DBUS_SESSION_BUS_ADDRESS; DBUS_SESSION_BUS_ADDRESS=$(cat "$work/bus")
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

logged() { grep -q "$1" "$work/app.log"; }
displayed() { dunstctl count displayed; }
wait_displayed() { # count
  for _ in $(seq 50); do [ "$(displayed)" -eq "$1" ] && return 0; sleep 0.1; done
  fail "$(displayed) notifications on screen, expected $1"
}
shot() { if [ -n "$shots" ]; then mkdir -p "$shots"; import -window root "$shots/$1.png"; fi; }

# --- the tray lists a pending approval; choosing Approve decides it
first=$(ask tray.txt)
wait_displayed 1
# The panel is the trayer window that holds the icons (trayer also has a hidden 10x10 one).
panel=$(xdotool search --name '^panel$' | head -1)
[ -n "$panel" ] || fail "no tray panel"
eval "$(xdotool getwindowgeometry --shell "$panel")"
visible() { { xdotool search --onlyvisible --class souz-app 2>/dev/null || true; } | wc -l; }
before=$(visible)
xdotool mousemove $((X + WIDTH / 2)) $((Y + HEIGHT / 2)) click 1
for _ in $(seq 50); do [ "$(visible)" -gt "$before" ] && break; sleep 0.1; done
[ "$(visible)" -gt "$before" ] || fail "a click on the tray icon showed no menu"
sleep 0.3
shot tray-menu
# The first item that can be chosen is the approval itself, the next one its Approve.
xdotool key Down Down Return
wait_status "$first" "approved tray"
logged "tray menu item=approve:$first" || fail "the tray did not choose Approve on $first"
[ -f "$HOME/tray.txt" ] || fail "approving in the tray did not run the tool"
wait_displayed 0
echo "PASS tray lists the approval and its Approve decides it (the notification is withdrawn)"

# --- a notification per approval; its Deny action decides it (dunst's context menu)
second=$(ask denied.txt)
wait_displayed 1
shot notification
echo Deny > "$SOUZ_CHOICE_FILE"
dunstctl context
wait_status "$second" "denied notification"
[ ! -e "$HOME/denied.txt" ] || fail "a denied call ran"
wait_displayed 0
echo "PASS notification Deny"

# --- its Approve action decides it too
third=$(ask approved.txt)
wait_displayed 1
echo Approve > "$SOUZ_CHOICE_FILE"
dunstctl context
wait_status "$third" "approved notification"
for _ in $(seq 50); do [ -f "$HOME/approved.txt" ] && break; sleep 0.1; done
[ -f "$HOME/approved.txt" ] || fail "approving from the notification did not run the tool"
echo "PASS notification Approve"

# --- a click on the body opens the window at that approval; deciding elsewhere withdraws it
fourth=$(ask elsewhere.txt)
wait_displayed 1
dunstctl action 0
for _ in $(seq 100); do xdotool search --name '^Souz$' >/dev/null 2>&1 && break; sleep 0.1; done
xdotool search --name '^Souz$' >/dev/null 2>&1 || fail "a click on the notification opened no window"
for _ in $(seq 200); do logged "window page loaded" && break; sleep 0.1; done
loaded=$(grep -o 'window page loaded ms=[0-9]*' "$work/app.log" | head -n 1 | sed 's/.*ms=//')
[ -n "$loaded" ] || fail "the window's page never finished loading"
echo "MEASURE window opened to its page loaded (WebKitGTK): ${loaded} ms"
for _ in $(seq 100); do logged "window first paint" && break; sleep 0.1; done
painted=$(grep -o 'window first paint ms=[0-9]*' "$work/app.log" | head -n 1 | sed 's/.*ms=//')
[ -n "$painted" ] || fail "the window's page never reported its first paint"
echo "MEASURE window opened to its first paint (WebKitGTK): ${painted} ms"
logged "notification action approval_id=$fourth action=tap" || fail "the click was not seen as a tap on $fourth"
api -X POST "$base/v1/approvals/$fourth/decision" -d '{"decision":"deny"}' >/dev/null
wait_displayed 0
echo "PASS a click opens the window; a decision made elsewhere withdraws the notification"

# --- a question from a real turn: notified, listed in the tray, answered by choosing a choice
chat=$(api -X POST "$base/v1/chats" -d '{"title":"Logo"}' | python3 -c 'import json,sys;print(json.load(sys.stdin)["chat"]["id"])')
api -X POST "$base/v1/chats/$chat/messages" -d '{"content":"Pick a color for the logo"}' >/dev/null
question=""
for _ in $(seq 100); do
  question=$(api "$base/v1/options" | python3 -c 'import json,sys;items=json.load(sys.stdin)["items"];print(items[0]["id"] if items else "")')
  [ -n "$question" ] && break; sleep 0.1
done
[ -n "$question" ] || fail "the turn asked no question"
wait_displayed 1
for _ in $(seq 50); do logged "question notification posted option_id=$question" && break; sleep 0.1; done
logged "question notification posted option_id=$question" || fail "no notification was posted for question $question"
grep -A2 -x "Souz asks" "$work/notifications" | grep -q "Which color should the logo be?" || fail "the notification did not carry the question: $(cat "$work/notifications")"
grep -A2 -x "Souz asks" "$work/notifications" | grep -q "Red · Blue" || fail "the notification did not carry the choices: $(cat "$work/notifications")"
shot notification-question
# The menu is redrawn after the notification is posted: open it once it lists the question.
for _ in $(seq 50); do logged "tray redrawn approvals=0 questions=1" && break; sleep 0.1; done
logged "tray redrawn approvals=0 questions=1" || fail "the tray was not redrawn with the question $question"
sleep 0.5
before=$(visible)
xdotool mousemove $((X + WIDTH / 2)) $((Y + HEIGHT / 2)) click 1
for _ in $(seq 50); do [ "$(visible)" -gt "$before" ] && break; sleep 0.1; done
[ "$(visible)" -gt "$before" ] || fail "a click on the tray icon showed no menu"
sleep 0.3
shot tray-menu-question
# No approval waits now: the first item that can be chosen is the question, then Red, then Blue.
xdotool key Down Down Down Return
for _ in $(seq 50); do logged "tray menu item=answer:$question:choice-2" && break; sleep 0.1; done
logged "tray menu item=answer:$question:choice-2" || fail "the tray did not offer Blue as an answer to $question"
answer_of() { api "$base/v1/options/$1" | python3 -c 'import json,sys;d=json.load(sys.stdin);print(d["status"], ",".join((d.get("answer") or {}).get("selectedOptionIds", [])))'; }
answered=""
for _ in $(seq 50); do answered=$(answer_of "$question"); [ "$answered" = "answered choice-2" ] && break; sleep 0.1; done
[ "$answered" = "answered choice-2" ] || fail "question $question is '$answered', expected answered with Blue"
wait_displayed 0
reply=""
for _ in $(seq 100); do
  reply=$(api "$base/v1/chats/$chat/messages" | python3 -c 'import json,sys;m=json.load(sys.stdin)["items"][-1];print(m["content"] if m["role"]=="assistant" else "")')
  [ -n "$reply" ] && break; sleep 0.1
done
[ "$reply" = "Blue it is." ] || fail "the turn did not finish after the answer (last message: '$reply')"
python3 - "$work/provider-requests.json" <<'PY' || fail "the model did not get the answer"
import json, sys
requests = json.load(open(sys.argv[1]))
last_user = [m for m in requests[-1]["messages"] if m["role"] == "user"][-1]["content"]
assert len(requests) == 2 and "Blue" in last_user, (len(requests), last_user)
PY
echo "PASS a question from a turn is notified, listed in the tray, and choosing Blue there answers it"

# --- figure: approval.requested (the approval's created_at) to the notification posted
python3 - "$SOUZ_HOME" "$token" "$base" "$second" "$third" "$fourth" <<'PY'
import datetime, glob, json, sys, urllib.request
home, token, base, approvals = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def instant(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
posted = {}
for path in glob.glob(home + "/logs/*.jsonl"):
    for line in open(path):
        entry = json.loads(line)
        fields = entry.get("fields", {})
        if fields.get("message") == "approval notification posted":
            posted[fields.get("approval_id")] = instant(entry["timestamp"])
latencies = []
for approval in approvals:
    request = urllib.request.Request(f"{base}/v1/approvals/{approval}", headers={"Authorization": f"Bearer {token}"})
    created = instant(json.load(urllib.request.urlopen(request))["created_at"])
    if approval not in posted:
        sys.exit(f"FAIL: no 'approval notification posted' log line for {approval}")
    latencies.append((posted[approval] - created).total_seconds() * 1000)
print("MEASURE approval.requested to notification posted: " + ", ".join(f"{ms:.1f} ms" for ms in latencies))
PY

# --- a turn that changed files: its end is notified with how many and Undo, which puts them
# back byte for byte (the history shows the undo); a file changed since makes Undo refuse,
# keep the outside change, and open the window at the turn's conflicts on the History page
sed -i 's/^turn_finished = false/turn_finished = true/' "$SOUZ_HOME/config.toml"
dunstctl close-all
wait_displayed 0
printf 'tea for two\r\n\xe2\x98\x95 \xd0\xba\xd0\xbe\xd1\x84\xd0\xb5\r\nno newline at the end' > "$HOME/notes.txt"
chmod 640 "$HOME/notes.txt"
notes_before=$(sha256sum < "$HOME/notes.txt")
approve_next() { # approves the next approval the turn asks for
  local id=""
  for _ in $(seq 100); do
    id=$(api "$base/v1/approvals?status=pending&limit=10" | python3 -c 'import json,sys;i=json.load(sys.stdin)["items"];print(i[0]["id"] if i else "")')
    [ -n "$id" ] && break; sleep 0.1
  done
  [ -n "$id" ] || fail "the turn asked for no approval"
  api -X POST "$base/v1/approvals/$id/decision" -d '{"decision":"approve"}' >/dev/null
  for _ in $(seq 100); do [ "$(status_of "$id" | cut -d' ' -f1)" = approved ] && return 0; sleep 0.1; done
  fail "approval $id is $(status_of "$id"), expected approved"
}
last_reply() { api "$base/v1/chats/$1/messages" | python3 -c 'import json,sys;m=json.load(sys.stdin)["items"][-1];print(m["content"] if m["role"]=="assistant" else "")'; }
wait_reply() { # chat, text
  local reply=""
  for _ in $(seq 100); do reply=$(last_reply "$1"); [ "$reply" = "$2" ] && return 0; sleep 0.1; done
  fail "the turn did not finish with '$2' (last message: '$reply')"
}
turn_of() { # chat -> the execution id of its last change
  api "$base/v1/history?limit=10" | python3 -c "import json,sys;print(next(c['executionId'] for c in json.load(sys.stdin)['changes'] if c['chatId']=='$1'))"
}
wait_logged() { for _ in $(seq 100); do logged "$1" && return 0; sleep 0.1; done; fail "$2"; }
notes_chat=$(api -X POST "$base/v1/chats" -d '{"title":"Notes"}' | python3 -c 'import json,sys;print(json.load(sys.stdin)["chat"]["id"])')
api -X POST "$base/v1/chats/$notes_chat/messages" -d '{"content":"Swap tea for coffee in my notes"}' >/dev/null
approve_next
approve_next
wait_reply "$notes_chat" "Edited the notes."
grep -q "coffee" "$HOME/notes.txt" || fail "the turn did not edit the notes"
[ -f "$HOME/made.txt" ] || fail "the turn did not create made.txt"
notes_turn=$(turn_of "$notes_chat")
wait_logged "turn notification posted with undo execution_id=$notes_turn" "no turn notification with Undo for $notes_turn"
wait_displayed 1
grep -A1 -x "Agent turn finished" "$work/notifications" | grep -qx "Notes — changed 2 files" || fail "the turn's notification did not say what it changed: $(cat "$work/notifications")"
shot notification-turn-undo
echo Undo > "$SOUZ_CHOICE_FILE"
dunstctl context
wait_logged "turn notification action execution_id=$notes_turn action=undo" "the notification's Undo was not chosen"
wait_logged "undo from a notification execution_id=$notes_turn" "the Undo did not reach the daemon"
for _ in $(seq 50); do [ ! -e "$HOME/made.txt" ] && break; sleep 0.1; done
[ ! -e "$HOME/made.txt" ] || fail "Undo left made.txt"
[ "$(sha256sum < "$HOME/notes.txt")" = "$notes_before" ] || fail "Undo did not bring notes.txt back byte for byte: $(od -c "$HOME/notes.txt" | head)"
[ "$(stat -c %a "$HOME/notes.txt")" = 640 ] || fail "Undo did not bring back the notes' mode: $(stat -c %a "$HOME/notes.txt")"
api "$base/v1/history?limit=20" | python3 -c "
import json, sys
changes = json.load(sys.stdin)['changes']
turn = [c for c in changes if c['executionId'] == '$notes_turn' and c['tool'] != 'Undo']
undos = [c for c in changes if c['tool'] == 'Undo' and c['undoes'] in {c['id'] for c in turn}]
assert len(turn) == 2 and all(c['status'] == 'undone' for c in turn), turn
assert len(undos) == 2 and all(c['client'] == 'api' for c in undos), undos
" || fail "the history does not show the turn undone"
for _ in $(seq 50); do grep -qx "Undid 2 changes" "$work/notifications" && break; sleep 0.1; done
grep -qx "Undid 2 changes" "$work/notifications" || fail "the undo was not reported: $(cat "$work/notifications")"
echo "PASS a turn's notification says it changed 2 files; its Undo puts them back byte for byte and the history shows the undo"

dunstctl close-all
wait_displayed 0
draft_chat=$(api -X POST "$base/v1/chats" -d '{"title":"Draft"}' | python3 -c 'import json,sys;print(json.load(sys.stdin)["chat"]["id"])')
api -X POST "$base/v1/chats/$draft_chat/messages" -d '{"content":"Start a draft"}' >/dev/null
approve_next
wait_reply "$draft_chat" "Drafted."
draft_turn=$(turn_of "$draft_chat")
wait_logged "turn notification posted with undo execution_id=$draft_turn" "no turn notification with Undo for $draft_turn"
wait_displayed 1
printf 'changed by me\n' > "$HOME/draft.txt"
dunstctl context
wait_logged "undo from a notification execution_id=$draft_turn" "the Undo did not reach the daemon"
wait_logged "opened the turn's conflicts route=/history/turn/$draft_turn" "the window did not open at the turn's conflicts"
xdotool search --name '^Souz$' >/dev/null 2>&1 || fail "no window shows the conflicts"
[ "$(cat "$HOME/draft.txt")" = "changed by me" ] || fail "a refused undo touched the file: $(cat "$HOME/draft.txt")"
for _ in $(seq 50); do grep -qx "1 file changed since — open History" "$work/notifications" && break; sleep 0.1; done
grep -B1 -x "1 file changed since — open History" "$work/notifications" | grep -qx "Could not undo" || fail "the refusal was not reported: $(cat "$work/notifications")"
api "$base/v1/history?execution_id=$draft_turn" | python3 -c "
import json, sys
changes = json.load(sys.stdin)['changes']
assert len(changes) == 1 and changes[0]['status'] == 'done', changes
" || fail "a refused undo changed the history"
api -X POST "$base/v1/history/undo/check" -d "{\"selection\":{\"type\":\"turn\",\"execution_id\":\"$draft_turn\"}}" | python3 -c "
import json, sys
check = json.load(sys.stdin)
assert [c['path'] for c in check['conflicts']] == ['$HOME/draft.txt'], check
" || fail "the History page's check does not show the conflict"
sleep 1
shot app-undo-conflict
dunstctl close-all
echo "PASS a file changed since: the notification's Undo refuses, keeps the change, and opens the turn's conflicts"
# --- start at login: the tray's toggle writes the XDG autostart entry (Exec = this app), a
# restarted app reads it back into its tray, and toggling it again removes the entry
entry="$HOME/.config/autostart/Souz.desktop"
[ ! -e "$entry" ] || fail "an autostart entry existed before the test"
toggle_autostart() { # opens the tray menu and chooses Start at login (third from the bottom)
  panel=$(xdotool search --name '^panel$' | head -1)
  eval "$(xdotool getwindowgeometry --shell "$panel")"
  local before; before=$(visible)
  xdotool mousemove $((X + WIDTH / 2)) $((Y + HEIGHT / 2)) click 1
  for _ in $(seq 50); do [ "$(visible)" -gt "$before" ] && break; sleep 0.1; done
  [ "$(visible)" -gt "$before" ] || fail "a click on the tray icon showed no menu"
  sleep 0.3
  # From the bottom: Quit, Restart Souz, (a separator), Start at login.
  xdotool key Up Up Up Return
}
log_lines() { wc -l < "$work/app.log"; }
logged_since() { tail -n "+$(( $1 + 1 ))" "$work/app.log" | grep -q "$2"; }
mark=$(log_lines)
toggle_autostart
for _ in $(seq 50); do logged_since "$mark" "tray menu item=autostart" && break; sleep 0.1; done
logged_since "$mark" "tray menu item=autostart" || fail "the tray did not choose Start at login"
for _ in $(seq 50); do [ -f "$entry" ] && break; sleep 0.1; done
[ -f "$entry" ] || fail "turning Start at login on wrote no $entry"
grep -qE "^Exec=$(readlink -f "$app")( |$)" "$entry" || fail "the autostart entry does not start this app: $(cat "$entry")"
grep -qx "Type=Application" "$entry" || fail "the autostart entry is not an application: $(cat "$entry")"
echo "PASS Start at login writes $entry starting $(readlink -f "$app")"

old_pid=$app_pid
mark=$(log_lines)
kill "$old_pid"
for _ in $(seq 300); do
  app_pid=$(python3 -c "import json;print(json.load(open('$SOUZ_HOME/daemon.json'))['pid'])" 2>/dev/null || true)
  [ -n "$app_pid" ] && [ "$app_pid" != "$old_pid" ] && curl -sf "$base/health" >/dev/null && break
  sleep 0.1
done
[ -n "$app_pid" ] && [ "$app_pid" != "$old_pid" ] || fail "the app did not come back after a restart"
for _ in $(seq 100); do logged_since "$mark" "tray redrawn.*autostart=true" && break; sleep 0.1; done
logged_since "$mark" "tray redrawn.*autostart=true" || fail "the restarted app's tray does not show Start at login on"
sleep 1
mark=$(log_lines)
toggle_autostart
for _ in $(seq 50); do [ ! -e "$entry" ] && break; sleep 0.1; done
[ ! -e "$entry" ] || fail "turning Start at login off left $entry"
for _ in $(seq 50); do logged_since "$mark" "tray redrawn.*autostart=false" && break; sleep 0.1; done
logged_since "$mark" "tray redrawn.*autostart=false" || fail "the tray does not show Start at login off"
echo "PASS after a restart the tray shows Start at login on; turning it off removes the entry"

# --- the tray follows the interface language chosen in Souz, without a restart
mark=$(log_lines)
api -X PATCH "$base/v1/me/settings" -d '{"interfaceLanguage":"ru"}' >/dev/null
for _ in $(seq 50); do logged_since "$mark" "tray redrawn.*language=ru" && break; sleep 0.1; done
logged_since "$mark" "tray redrawn.*language=ru" || fail "the tray was not redrawn in Russian"
api -X PATCH "$base/v1/me/settings" -d '{"interfaceLanguage":"en"}' >/dev/null
for _ in $(seq 50); do logged_since "$mark" "tray redrawn.*language=en" && break; sleep 0.1; done
logged_since "$mark" "tray redrawn.*language=en" || fail "the tray was not redrawn in English again"
echo "PASS the tray follows interfaceLanguage"

# --- the push-to-talk hotkey (`[voice] hotkey`, CmdOrCtrl+Shift+Space: Ctrl+Shift+Space here)
# is a global shortcut: pressed with no window focused, it shows the window at the chat
logged "push-to-talk hotkey registered" || fail "the push-to-talk hotkey was not registered"
mark=$(log_lines)
xdotool key ctrl+shift+space
for _ in $(seq 100); do logged_since "$mark" "push-to-talk hotkey pressed" && break; sleep 0.1; done
logged_since "$mark" "push-to-talk hotkey pressed" || fail "the hotkey did not reach the app"
for _ in $(seq 100); do xdotool search --name '^Souz$' >/dev/null 2>&1 && break; sleep 0.1; done
xdotool search --name '^Souz$' >/dev/null 2>&1 || fail "the hotkey opened no window"
echo "PASS the push-to-talk hotkey reaches the app and shows its window"

# --- launched asking for its window (souz-app --show, as from a launcher): the window opens
# once the daemon is up; measured from the app's start to the window's first paint
echo "--show" > "$work/app-args"
old_pid=$app_pid
mark=$(log_lines)
kill "$old_pid"
for _ in $(seq 600); do logged_since "$mark" "window first paint" && break; sleep 0.1; done
line=$(tail -n "+$(( mark + 1 ))" "$work/app.log" | grep -m 1 "window first paint") || fail "the app started with --show painted no window"
since_start=$(echo "$line" | grep -o 'since_start_ms=[0-9]*' | sed 's/.*=//')
page=$(echo "$line" | grep -o 'page_ms=[0-9]*' | sed 's/.*=//')
xdotool search --name '^Souz$' >/dev/null 2>&1 || fail "the app started with --show has no window"
echo "MEASURE app start to the window's first paint (--show, WebKitGTK): ${since_start} ms (the page painted ${page} ms after its navigation began)"
echo "PASS souz-app --show opens the window at launch"

echo "all app checks passed"
