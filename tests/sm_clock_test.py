#!/usr/bin/env python3
"""scripts/sm_clock.py: the throttle rule matches fa-bench's (src/measure/throttle.h,
tests/test_throttle.cpp), and on a machine without NVML the clock reads -1 instead of
failing. Exit 0 on success, 1 with what differed."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
import sm_clock  # noqa: E402


def main():
    bad = []
    if sm_clock.throttle_reason(1980, 1980) != "":
        bad.append("a steady clock was flagged")
    if sm_clock.throttle_reason(1980, 1890) != "":
        bad.append("a 4.5 % drop was flagged")
    r = sm_clock.throttle_reason(1980, 1605)
    if not (r.startswith("throttled:") and "1980" in r and "1605" in r):
        bad.append(f"a 19 % drop gave {r!r}")
    if sm_clock.throttle_reason(-1, 1605) or sm_clock.throttle_reason(1605, 1980):
        bad.append("an unreadable or rising clock was flagged")
    if sm_clock.throttle_reason(1980, 1980, 1980) or sm_clock.throttle_reason(1950, 1965, 1980):
        bad.append("a clock within 5 % of its maximum was flagged")
    low = sm_clock.throttle_reason(1635, 1695, 1980)
    if not (low.startswith("throttled:") and "1635" in low and "1980 MHz maximum" in low):
        bad.append(f"a row timed at 1635-1695 of 1980 MHz gave {low!r}")
    if not sm_clock.throttle_reason(1725, 1965, 1980) or sm_clock.throttle_reason(1635, 1695, -1):
        bad.append("a recovering clock was not flagged, or one without a known maximum was")
    mhz = sm_clock.SmClock("0000:ff:1f.7").mhz()  # no such device anywhere
    if not isinstance(sm_clock.SmClock("0000:ff:1f.7").max_mhz(), int):
        bad.append("max clock is not an int")
    if not isinstance(mhz, int) or (mhz != -1 and mhz < 100):
        bad.append(f"clock read {mhz!r}")
    if bad:
        print("sm_clock_test: " + "; ".join(bad))
        return 1
    print(f"sm_clock_test: ok (this machine's clock: {mhz} MHz)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
