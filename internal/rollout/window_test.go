package rollout

import (
	"testing"
	"time"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

func at(t *testing.T, zone, s string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatalf("zone %s: %v", zone, err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestOpenAcrossDST: a nightly window in Europe/London 01:00-03:00 on the night the clocks go
// forward (Sunday 2026-03-29, 01:00 GMT becomes 02:00 BST) lasts one real hour; on the night they go
// back (Sunday 2026-10-25, 02:00 BST becomes 01:00 GMT) three. The window opens at wall-clock 01:00 in
// the offset of that moment, which is a different UTC time either side of the change.
func TestOpenAcrossDST(t *testing.T) {
	w := []tsv1.MaintenanceWindow{{Days: []tsv1.Weekday{"Sat", "Sun"}, Start: "01:00", End: "03:00", TimeZone: "Europe/London"}}
	utc := func(s string) time.Time { return at(t, "UTC", s) }
	for _, tt := range []struct {
		name      string
		now       time.Time
		open      bool
		next, end time.Time
	}{
		{"Saturday before spring forward, inside (GMT)", utc("2026-03-28 01:30"), true, time.Time{}, utc("2026-03-28 03:00")},
		{"Saturday, after the window: next is Sunday 01:00 GMT", utc("2026-03-28 04:00"), false, utc("2026-03-29 01:00"), time.Time{}},
		// 03:00 BST is 02:00 UTC: the spring-forward window is one real hour.
		{"spring-forward Sunday, inside", utc("2026-03-29 01:30"), true, time.Time{}, utc("2026-03-29 02:00")},
		{"spring-forward Sunday, 02:30 UTC = 03:30 BST is after it", utc("2026-03-29 02:30"), false, utc("2026-04-04 00:00"), time.Time{}},
		// Summer: 01:00 BST is 00:00 UTC.
		{"summer Saturday, 00:30 UTC is inside (01:30 BST)", utc("2026-04-04 00:30"), true, time.Time{}, utc("2026-04-04 02:00")},
		// Fall back: 01:00 BST = 00:00 UTC opens; 03:00 GMT = 03:00 UTC closes: three real hours.
		{"fall-back Sunday, 02:30 UTC (01:30 GMT, the second time round) is inside", utc("2026-10-25 02:30"), true, time.Time{}, utc("2026-10-25 03:00")},
		{"fall-back Saturday after the window: next is Sunday 01:00 BST = 00:00 UTC", utc("2026-10-24 03:00"), false, utc("2026-10-25 00:00"), time.Time{}},
		{"after fall-back: next Saturday opens at 01:00 GMT", utc("2026-10-25 04:00"), false, utc("2026-10-31 01:00"), time.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			open, next, until, err := Open(w, tt.now)
			if err != nil {
				t.Fatal(err)
			}
			if open != tt.open {
				t.Fatalf("open = %v, want %v", open, tt.open)
			}
			if open && !until.Equal(tt.end) {
				t.Errorf("closes at %s, want %s", until.UTC(), tt.end)
			}
			if !open && !next.Equal(tt.next) {
				t.Errorf("next opening %s, want %s", next.UTC(), tt.next)
			}
		})
	}
}

// TestOpenPastMidnight: a window whose end is before its start runs into the next day, still
// counted from its start's day.
func TestOpenPastMidnight(t *testing.T) {
	w := []tsv1.MaintenanceWindow{{Days: []tsv1.Weekday{"Fri"}, Start: "22:00", End: "02:00", TimeZone: "America/New_York"}}
	// Friday 2026-11-27 22:00 EST = Saturday 03:00 UTC.
	open, _, until, err := Open(w, at(t, "America/New_York", "2026-11-28 01:59"))
	if err != nil || !open || !until.Equal(at(t, "America/New_York", "2026-11-28 02:00")) {
		t.Fatalf("Saturday 01:59 after a Friday 22:00-02:00 window: open %v until %s err %v", open, until, err)
	}
	open, next, _, _ := Open(w, at(t, "America/New_York", "2026-11-28 02:00"))
	if open || !next.Equal(at(t, "America/New_York", "2026-12-04 22:00")) {
		t.Fatalf("Saturday 02:00: open %v next %s, want closed until Friday 2026-12-04 22:00", open, next)
	}
}

func TestNoWindowsIsAlwaysOpen(t *testing.T) {
	if open, _, _, err := Open(nil, time.Now()); !open || err != nil {
		t.Fatalf("no windows: open %v err %v", open, err)
	}
}

func TestCheckWindowNamesTheField(t *testing.T) {
	for _, tt := range []struct {
		w    tsv1.MaintenanceWindow
		want string
	}{
		{tsv1.MaintenanceWindow{Days: []tsv1.Weekday{"Mon"}, Start: "01:00", End: "02:00", TimeZone: "Local"}, "timeZone: "},
		{tsv1.MaintenanceWindow{Days: []tsv1.Weekday{"Mon"}, Start: "1:00", End: "02:00", TimeZone: "UTC"}, "start: "},
		{tsv1.MaintenanceWindow{Days: []tsv1.Weekday{"Mon"}, Start: "01:00", End: "01:00", TimeZone: "UTC"}, "end: equals start"},
		{tsv1.MaintenanceWindow{Days: []tsv1.Weekday{"mon"}, Start: "01:00", End: "02:00", TimeZone: "UTC"}, "days: "},
	} {
		err := CheckWindow(tt.w)
		if err == nil || len(err.Error()) < len(tt.want) || err.Error()[:len(tt.want)] != tt.want {
			t.Errorf("CheckWindow(%+v) = %v, want it to start with %q", tt.w, err, tt.want)
		}
	}
}
