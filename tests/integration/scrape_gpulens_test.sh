#!/usr/bin/env bash
# One gpulens scraping another (the simulator, a thermal fault on GPU 5):
# the scraped GPU series keep their own labels (clock-event reason), so that
# the series of one field stay apart with the source's values, and the
# scraping agent says the data is simulated.
set -euo pipefail
GPULENS=$1 ROOT=$2
source "$ROOT/tests/integration/lib/stack.sh"
stack_init curl

src=$(free_port) agent=$(free_port)
start_agent sim "$src" --source sim --scenario thermal-throttle-one-gpu --sim-prefill 2m
start_agent main "$agent" --source scrape --scrape "http://127.0.0.1:$src/metrics" --interval 1s
pick() {  # port file: the thermal and power clock-event series of GPU 5
  curl -fs --max-time 5 "http://127.0.0.1:$1/metrics" >"$2.all"
  grep -E '^gpu_clock_event_active\{gpu="5",.*reason="(sw_thermal|hw_thermal|sw_power_cap|hw_power_brake)"' "$2.all" | sort >"$2" || true
}
deadline=$((SECONDS + 15))
until pick "$agent" "$STACK/got" && [[ $(wc -l <"$STACK/got") == 4 ]]; do
  ((SECONDS < deadline)) || stack_fail "scraped clock-event series: $(grep '^gpu_clock_event_active{gpu="5"' "$STACK/got.all")"
  sleep 0.3
done
pick "$src" "$STACK/want"
diff "$STACK/want" "$STACK/got" >"$STACK/diff" || stack_fail "clock-event series changed on the way: $(cat "$STACK/diff")"
grep -q 'reason="hw_thermal"} 1$' "$STACK/got" || stack_fail "GPU 5's thermal event lost: $(cat "$STACK/got")"
grep -q '^gpulens_simulated{scenario="scrape http://127.0.0.1:'"$src"'/metrics"} 1$' "$STACK/got.all" ||
  stack_fail "the scraping agent does not say its data is simulated"
echo "scrape_gpulens: ok"
