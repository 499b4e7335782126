# Sourced by the walk scripts beside it (with $out, $screen and $display set): an Xvfb screen, a private PulseAudio
# null sink, the app started (`spokenbench-studio $app_args`) with its window given the keyboard (no window manager
# runs) once a window titled $app_title shows (waited for up to $app_wait s, then $app_settle s more), `grab NAME`,
# which saves the whole screen to $out/NAME.png through Qt, and `shot NAME [SECONDS]`, which waits, grabs and says
# which window is active. Everything it starts is ended when the script exits.
mkdir -p "$out"
export XDG_DATA_HOME="$out/data" XDG_CONFIG_HOME="$out/config"
Xvfb "$display" -screen 0 "${screen}x24" -nolisten tcp >"$out/xvfb.log" 2>&1 &
xvfb=$!
export PULSE_RUNTIME_PATH="$out/pulse" PULSE_STATE_PATH="$out/pulse"
mkdir -p "$PULSE_RUNTIME_PATH"
pulseaudio -n --daemonize=no --exit-idle-time=-1 --use-pid-file=no --disallow-exit \
    --load=module-native-protocol-unix "--load=module-null-sink sink_name=spokenbench_null" >"$out/pulse.log" 2>&1 &
pulse=$!
export PULSE_SERVER="unix:$PULSE_RUNTIME_PATH/native"  # Qt and PortAudio's ALSA pulse plugin both use it
sleep 1
export DISPLAY=$display
# shellcheck disable=SC2086  # app_args holds separate arguments
spokenbench-studio ${app_args:-} >"$out/app.log" 2>&1 &
app=$!
trap 'kill $app $xvfb $pulse 2>/dev/null' EXIT
for _ in $(seq 1 "${app_wait:-30}"); do
    sleep 1
    xdotool search --name "${app_title:-SpokenBench Studio}" >/dev/null 2>&1 && break
done
sleep "${app_settle:-3}"
window=$(xdotool search --name "SpokenBench Studio" | head -1)
xdotool windowfocus --sync "$window"
grab() { python -c "import sys; from PySide6.QtGui import QGuiApplication; app = QGuiApplication([]); app.primaryScreen().grabWindow(0).save(sys.argv[1])" "$out/$1.png" >/dev/null; }
shot() { sleep "${2:-1.5}"; grab "$1"; echo "$1: $(xdotool getactivewindow getwindowname 2>/dev/null)"; }
