#!/usr/bin/env bash
# A keyboard-only walk through `spokenbench-studio --demo` in a real X server at a laptop's 1280×720, driven by
# xdotool alone, with a screenshot of the whole screen after each step (issue 22: keys after a page switch, Enter,
# the focus ring, Esc, the tour's keys, a window that never outgrows the screen; issue 27: the Results page while
# another process's evaluation ends, its old figures marked while new ones compute). Playback goes to a private
# PulseAudio null sink, so the app has a real output device (desktop.sh beside it starts both and the app). Needs
# Xvfb, PulseAudio, xdotool (Debian: apt-get install xvfb pulseaudio xdotool). Nothing is written into the
# repository:
#
#     bash docs/screenshots/keyboard_walk.sh OUT_DIR [DISPLAY_NUMBER]
#
# The demo and the settings go to OUT_DIR/data and OUT_DIR/config (never the user's own); the window's geometry
# is printed after each step.
set -u
out=${1:?give a folder for the screenshots}
display=:${2:-77}
screen=${SCREEN:-1280x720}  # SCREEN=1400x900 for the desktop size
app_args=--demo app_title="SpokenBench Studio — " app_wait=120 app_settle=8  # the demo is built the first time
. "$(dirname "$0")/desktop.sh"

step() {  # step NAME KEY...: press the keys 0.15 s apart, wait for the screen, grab it, say the window's size
    local name=$1
    shift
    xdotool key --delay 150 "$@"
    sleep 1.2
    grab "$name"
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
step 16-tour-closed Escape
step 17-results ctrl+7
step 18-results-panel-above Up
# another process's evaluation on the same project: the page waits for it, then shows the old figures marked
# while it recomputes in its job process, and keeps answering keys
spokenbench evaluate "$XDG_DATA_HOME/SpokenBench/SpokenBench Studio/demo-project" --model simulated:steady \
    --mode text --prompt standard --limit 20 --name walk-run >"$out/evaluate.log" 2>&1
sleep 0.3
step 19-results-after-a-run Up
sleep 4
step 20-results-updated Down
step 21-evaluate ctrl+6  # the evaluation page with the run just made
step 22-jobs ctrl+j  # the jobs panel: every process's jobs on the project
step 23-jobs-closed Escape
# the spectrogram (S) while the window is resized: the stretched picture at once, drawn again for the new size
# once the resize settles, and again at the old size (a window manager's drag does what xdotool windowsize does)
step 24-rating-again ctrl+3 Tab Return
step 25-spectrogram s
size=$(xdotool getwindowgeometry "$window" | awk '/Geometry/{print $2}')
xdotool windowsize "$window" $((${size%x*} - 200)) $((${size#*x} - 120))
sleep 0.05
grab 26-spectrogram-just-resized
sleep 2
grab 27-spectrogram-resized-settled
xdotool windowsize "$window" "${size%x*}" "${size#*x}"
sleep 2
grab 28-spectrogram-size-back
echo "26-28 resized to $((${size%x*} - 200))x$((${size#*x} - 120)) and back: $(xdotool getwindowgeometry "$window" | grep Geometry)"
pactl list short sinks >"$out/sinks.txt" 2>&1
