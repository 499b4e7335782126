#!/usr/bin/env bash
# A keyboard-only walk through `spokenbench-studio --demo` in a real X server at a laptop's 1280×720, driven by
# xdotool alone, with a screenshot of the whole screen after each step (issue 22: keys after a page switch, Enter,
# the focus ring, Esc, the tour's keys, a window that never outgrows the screen). Needs Xvfb, xdotool and
# ImageMagick's import (Debian: apt-get install xvfb xdotool imagemagick). Nothing is written into the repository:
#
#     bash docs/screenshots/keyboard_walk.sh OUT_DIR [DISPLAY_NUMBER]
#
# The demo and the settings go to OUT_DIR/data and OUT_DIR/config (never the user's own); the window's geometry
# is printed after each step.
set -u
out=${1:?give a folder for the screenshots}
display=:${2:-77}
screen=${SCREEN:-1280x720}  # SCREEN=1400x900 for the desktop size
mkdir -p "$out"
export XDG_DATA_HOME="$out/data" XDG_CONFIG_HOME="$out/config"
Xvfb "$display" -screen 0 "${screen}x24" -nolisten tcp >"$out/xvfb.log" 2>&1 &
xvfb=$!
trap 'kill "$app" "$xvfb" 2>/dev/null' EXIT
sleep 1
export DISPLAY=$display
spokenbench-studio --demo >"$out/app.log" 2>&1 &
app=$!
for _ in $(seq 1 120); do  # the demo is built the first time (a minute on a slow machine)
    sleep 1
    xdotool search --name "SpokenBench Studio — " >/dev/null 2>&1 && break
done
sleep 8  # the tour's first step drawn
window=$(xdotool search --name "SpokenBench Studio" | head -1)
xdotool windowfocus --sync "$window"  # no window manager gives it the keyboard

step() {  # step NAME KEY...: press the keys 0.15 s apart, wait for the screen, grab it, say the window's size
    local name=$1
    shift
    xdotool key --delay 150 "$@"
    sleep 1.2
    import -window root "$out/$name.png"
    echo "$name: $(xdotool getwindowgeometry "$window" | grep Geometry)"
}

step 01-tour-step-1 shift  # nothing: the demo with the tour as it opened
for n in 2 3 4 5; do step "02-tour-step-$n" alt+n; done  # a step is drawn before the next key (as a reader would)
step 02-tour-step-6 alt+n
step 03-tour-closed Escape
step 04-rating-queues ctrl+3
step 05-tab-to-start Tab
step 06-enter-starts Return
step 07-rated-1 1
step 08-after-ctrl6-ctrl3-rated-2 ctrl+6 ctrl+3 2
step 09-key-help question
step 10-help-closed Escape
step 11-back-to-queues Escape
step 12-items-enter ctrl+1 Return
step 13-qc ctrl+4
step 14-f1-tour F1
for n in 2 3 4 5 6; do step "14-tour-step-$n" alt+n; done
step 15-alt-n-done alt+n
