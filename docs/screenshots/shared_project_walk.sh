#!/usr/bin/env bash
# A keyboard-only walk through the app on shared projects another program changed (docs/reliability.md, trust
# model), in a real X server with a private PulseAudio null sink, driven by xdotool alone, a screenshot of the whole
# screen after each step: File > Open (Ctrl+O, the folder typed, Return) on a project with a foreign trigger, then on
# one with a foreign value (each a dialog naming it; Return dismisses it), then on one whose job row has a time that
# is not a time, and its jobs panel (Ctrl+J). Needs Xvfb, PulseAudio, xdotool and PySide6 (the grab):
#
#     bash docs/screenshots/shared_project_walk.sh OUT_DIR 1280x720 DISPLAY_NUMBER TRIGGER_PROJECT VALUE_PROJECT JOBS_PROJECT
#
# Make the three projects from copies of the demo (`spokenbench demo D`):
#   sqlite3 T/project.sqlite "CREATE TRIGGER zz_flip AFTER INSERT ON ratings BEGIN UPDATE ratings SET rating='incorrect' WHERE id = NEW.id; END"
#   sqlite3 V/project.sqlite "UPDATE runs SET name = X'FF00' WHERE id = 1"
#   sqlite3 J/project.sqlite "UPDATE jobs SET started_at = 'x', heartbeat_at = 'x', finished_at = 'x'"
# No window manager runs, so the script gives the window the keyboard back after a dialog closes, as one would.
set -u
out=$1; screen=$2; display=:$3; trigger_project=$4; value_project=$5; jobs_project=$6
. "$(dirname "$0")/desktop.sh"
open_path() {  # Ctrl+O, select the file name field's text, type the folder, Enter twice (into it, then Choose)
    xdotool windowfocus --sync "$window"  # as a window manager gives it back after a dialog closes
    xdotool key ctrl+o; sleep 1.5
    xdotool key ctrl+a; xdotool type --delay 20 "$1"; shot "$2-a-typed" 0.5
    xdotool key Escape; sleep 0.3; xdotool key Return  # Escape closes the completion list; Return chooses
}
shot 00-welcome
open_path "$trigger_project" 01-schema; shot 01-schema-b-dialog 4
xdotool key Return; shot 01-schema-c-dismissed
open_path "$value_project" 02-values; shot 02-values-b-dialog 4
xdotool key Return; shot 02-values-c-dismissed
open_path "$jobs_project" 03-jobs; shot 03-jobs-b-opened 6
xdotool windowfocus --sync "$window"; xdotool key ctrl+j; shot 03-jobs-c-panel 2
pactl list short sinks 2>/dev/null | head -2
grep -i -E "traceback|error" "$out/app.log" | head -5
