#!/usr/bin/env bash
# A keyboard-only look at the jobs panel of a project whose jobs were stopped, taken over or come from a machine
# whose clock runs ahead (docs/reliability.md, "A job stopped and continued ..."), in a real X server with a private
# PulseAudio null sink, driven by xdotool alone: File > Open (Ctrl+O, the folder typed, Return), then the jobs panel
# (Ctrl+J), a screenshot of the whole screen after each step. Needs Xvfb, PulseAudio, xdotool and PySide6:
#
#     bash docs/screenshots/jobs_panel_walk.sh OUT_DIR 1280x720 DISPLAY_NUMBER PROJECT
#
# PROJECT is a copy of the demo (`spokenbench demo D`) with three job rows added (see make_jobs_project.py beside
# this script), one of them naming a process on this machine stopped with `kill -STOP`.
set -u
out=$1; screen=$2; display=:$3; project=$4
. "$(dirname "$0")/desktop.sh"
xdotool key ctrl+o; sleep 1.5
xdotool key ctrl+a; xdotool type --delay 20 "$project"; shot 01-open-typed 0.5
xdotool key Escape; sleep 0.3; xdotool key Return; shot 02-opened 6
xdotool windowfocus --sync "$window"; xdotool key ctrl+j; shot 03-jobs-panel 2
grep -i -E "traceback|error" "$out/app.log" | head -5
