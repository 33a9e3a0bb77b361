// Package rollout holds the rollout controls' arithmetic shared by the operator and `tickstack plan`:
// maintenance windows (in IANA time zones, across DST changes) and budgets per topology domain.
package rollout

import (
	"fmt"
	"time"
	// The zone database is built in: the operator's image and a workstation running tickstack plan
	// need not have one, and both must agree on every window.
	_ "time/tzdata"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

var weekdays = map[tsv1.Weekday]time.Weekday{
	"Sun": time.Sunday, "Mon": time.Monday, "Tue": time.Tuesday, "Wed": time.Wednesday,
	"Thu": time.Thursday, "Fri": time.Friday, "Sat": time.Saturday,
}

// Interval is one opening of a window: [Start, End).
type Interval struct{ Start, End time.Time }

// clock parses HH:MM.
func clock(s string) (h, m int, err error) {
	if _, err := fmt.Sscanf(s, "%d:%d", &h, &m); err != nil || len(s) != 5 || h < 0 || h > 23 || m < 0 || m > 59 {
		return 0, 0, fmt.Errorf("%q is not a time of day HH:MM (24h)", s)
	}
	return h, m, nil
}

// CheckWindow returns the problem of one window, naming the field, or nil.
func CheckWindow(w tsv1.MaintenanceWindow) error {
	if _, err := time.LoadLocation(w.TimeZone); err != nil || w.TimeZone == "" || w.TimeZone == "Local" {
		return fmt.Errorf("timeZone: %q is not an IANA time zone name (such as Europe/London, America/New_York or UTC)", w.TimeZone)
	}
	if _, _, err := clock(w.Start); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if _, _, err := clock(w.End); err != nil {
		return fmt.Errorf("end: %w", err)
	}
	if w.Start == w.End {
		return fmt.Errorf("end: equals start (%s): a window of no time never opens", w.Start)
	}
	for _, d := range w.Days {
		if _, ok := weekdays[d]; !ok {
			return fmt.Errorf("days: %q is not one of Mon, Tue, Wed, Thu, Fri, Sat, Sun", d)
		}
	}
	return nil
}

// openings lists the window's openings that start on the calendar days from..to (inclusive) in its
// zone. Start and end are wall-clock times of that zone: on a DST change day the opening is longer or
// shorter in real time. A wall time that happens twice (the clocks going back) opens at its first
// occurrence and closes at its last; one that does not happen (the clocks going forward) is the
// instant time.Date normalizes it to.
func openings(w tsv1.MaintenanceWindow, from, to time.Time) ([]Interval, error) {
	if err := CheckWindow(w); err != nil {
		return nil, err
	}
	loc, _ := time.LoadLocation(w.TimeZone)
	sh, sm, _ := clock(w.Start)
	eh, em, _ := clock(w.End)
	days := map[time.Weekday]bool{}
	for _, d := range w.Days {
		days[weekdays[d]] = true
	}
	var out []Interval
	f := from.In(loc)
	day := time.Date(f.Year(), f.Month(), f.Day(), 12, 0, 0, 0, loc)
	for ; !day.After(to.In(loc).Add(24 * time.Hour)); day = day.AddDate(0, 0, 1) {
		if !days[day.Weekday()] {
			continue
		}
		start := wall(day, sh, sm, loc, true)
		endDay := day
		if eh*60+em <= sh*60+sm {
			endDay = day.AddDate(0, 0, 1)
		}
		end := wall(endDay, eh, em, loc, false)
		if end.After(start) {
			out = append(out, Interval{start, end})
		}
	}
	return out, nil
}

// wall is the instant of wall-clock time h:m on day's date in loc; of a wall time that happens
// twice, the first occurrence (first) or the last. time.Date leaves that choice open.
func wall(day time.Time, h, m int, loc *time.Location, first bool) time.Time {
	t := time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, loc)
	same := func(u time.Time) bool {
		u = u.In(loc)
		return u.Day() == t.Day() && u.Hour() == t.Hour() && u.Minute() == t.Minute()
	}
	best := t
	for _, d := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} { // every DST shift in use
		if first && same(t.Add(-d)) && t.Add(-d).Before(best) {
			best = t.Add(-d)
		}
		if !first && same(t.Add(d)) && t.Add(d).After(best) {
			best = t.Add(d)
		}
	}
	return best
}

// Open reports whether now is inside one of the windows (no windows: always), and if not, when the
// next one opens (zero when none opens within the next 8 days, which only an empty days list allows).
// While open, until is when the current opening closes.
func Open(windows []tsv1.MaintenanceWindow, now time.Time) (open bool, next time.Time, until time.Time, err error) {
	if len(windows) == 0 {
		return true, now, time.Time{}, nil
	}
	for _, w := range windows {
		ivs, err := openings(w, now.AddDate(0, 0, -2), now.AddDate(0, 0, 8))
		if err != nil {
			return false, time.Time{}, time.Time{}, err
		}
		for _, iv := range ivs {
			if !now.Before(iv.Start) && now.Before(iv.End) {
				if !open || iv.End.After(until) {
					until = iv.End
				}
				open = true
			} else if iv.Start.After(now) && (next.IsZero() || iv.Start.Before(next)) {
				next = iv.Start
			}
		}
	}
	if open {
		return true, now, until, nil
	}
	return false, next, time.Time{}, nil
}

// Gate says whether a new reboot slot may be given at now: not while paused, nor outside
// the maintenance windows. When not, reason and message say why, and next is when the next window
// opens (zero: paused, or none opens).
func Gate(r *tsv1.RolloutSpec, now time.Time) (ok bool, reason, message string, next time.Time) {
	if r == nil {
		return true, "", "", time.Time{}
	}
	if r.Paused {
		return false, tsv1.ReasonRolloutPaused, "spec.rollout.paused is true: no reboot or kubelet restart starts until it is false", time.Time{}
	}
	open, next, _, err := Open(r.Windows, now)
	switch {
	case err != nil:
		return false, tsv1.ReasonOutsideWindow, "spec.rollout.windows: " + err.Error(), time.Time{}
	case open:
		return true, "", "", time.Time{}
	case next.IsZero():
		return false, tsv1.ReasonOutsideWindow, "no spec.rollout.windows window opens in the next 8 days", time.Time{}
	}
	return false, tsv1.ReasonOutsideWindow, fmt.Sprintf("outside spec.rollout.windows: the next window opens at %s", next.UTC().Format(time.RFC3339)), next
}
